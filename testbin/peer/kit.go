// --kit: the namespace kit the way a kubebuilder operator would stamp it, for `make compare`'s
// kit part. One reconciler per kind (NetworkPolicy, LimitRange, ResourceQuota, RoleBinding),
// each copying the labelled sources of its kind into every selected namespace: create when
// missing, update when the copied fields differ (semantic equality, so server defaults are no
// drift), delete and create when a RoleBinding's roleRef changed (it is immutable). What a copy
// carries is what skiff copies: spec, or a RoleBinding's subjects and roleRef.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// What sync found: the copy is up to date, needs an update, or must be replaced.
type change int

const (
	same change = iota
	update
	replace
)

// kitKind is one kind of the kit: how to make its objects and lists, and how to bring a copy's
// content to the source's.
type kitKind struct {
	name   string
	object func() client.Object
	list   func() client.ObjectList
	sync   func(src, dst client.Object) change
}

var kitKinds = []kitKind{
	{"networkpolicy", func() client.Object { return &networkingv1.NetworkPolicy{} },
		func() client.ObjectList { return &networkingv1.NetworkPolicyList{} },
		func(s, d client.Object) change {
			return syncField(&s.(*networkingv1.NetworkPolicy).Spec, &d.(*networkingv1.NetworkPolicy).Spec)
		}},
	{"limitrange", func() client.Object { return &corev1.LimitRange{} },
		func() client.ObjectList { return &corev1.LimitRangeList{} },
		func(s, d client.Object) change {
			return syncField(&s.(*corev1.LimitRange).Spec, &d.(*corev1.LimitRange).Spec)
		}},
	{"resourcequota", func() client.Object { return &corev1.ResourceQuota{} },
		func() client.ObjectList { return &corev1.ResourceQuotaList{} },
		func(s, d client.Object) change {
			return syncField(&s.(*corev1.ResourceQuota).Spec, &d.(*corev1.ResourceQuota).Spec)
		}},
	{"rolebinding", func() client.Object { return &rbacv1.RoleBinding{} },
		func() client.ObjectList { return &rbacv1.RoleBindingList{} },
		func(s, d client.Object) change {
			src, dst := s.(*rbacv1.RoleBinding), d.(*rbacv1.RoleBinding)
			if dst.RoleRef.Name != "" && !equality.Semantic.DeepEqual(src.RoleRef, dst.RoleRef) {
				return replace
			}
			dst.RoleRef = src.RoleRef
			return syncField(&src.Subjects, &dst.Subjects)
		}},
}

// syncField sets *dst to *src unless they are semantically equal.
func syncField[T any](src, dst *T) change {
	if equality.Semantic.DeepEqual(*src, *dst) {
		return same
	}
	*dst = *src
	return update
}

// kitCache caches each kit kind's sources and copies (both carry the source label).
func kitCache(byObject map[client.Object]cache.ByObject, sources labels.Selector) {
	for _, k := range kitKinds {
		byObject[k.object()] = cache.ByObject{Label: sources}
	}
}

// setupKit adds one reconciler per kit kind.
func setupKit(mgr ctrl.Manager, o options, selector labels.Selector) error {
	for _, k := range kitKinds {
		r := &KitReconciler{Client: mgr.GetClient(), kind: k, SourceNamespace: o.sourceNamespace,
			SourceLabel: o.sourceLabel, Namespaces: selector}
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

// KitReconciler keeps a copy of each source of its kind in every selected namespace.
type KitReconciler struct {
	client.Client
	kind                         kitKind
	SourceNamespace, SourceLabel string
	Namespaces                   labels.Selector
}

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=limitranges;resourcequotas,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=edit

func (r *KitReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	source := r.kind.object()
	if err := r.Get(ctx, req.NamespacedName, source); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, eachTarget(ctx, r.Client, r.Namespaces, r.SourceNamespace, func(ns string) error {
		return r.ensureCopy(ctx, source, ns)
	})
}

func (r *KitReconciler) ensureCopy(ctx context.Context, source client.Object, namespace string) error {
	existing := r.kind.object()
	err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: source.GetName()}, existing)
	switch {
	case apierrors.IsNotFound(err):
		return r.Create(ctx, r.fresh(source, namespace))
	case err != nil:
		return err
	case existing.GetLabels()["app.kubernetes.io/managed-by"] != managedBy:
		return nil // not ours: never touched
	}
	switch r.kind.sync(source, existing) {
	case same:
		return nil
	case replace:
		uid := existing.GetUID()
		if err := r.Delete(ctx, existing, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return err
		}
		return r.Create(ctx, r.fresh(source, namespace))
	}
	return r.Update(ctx, existing)
}

// fresh is a new copy of source for namespace.
func (r *KitReconciler) fresh(source client.Object, namespace string) client.Object {
	copied := r.kind.object()
	copied.SetName(source.GetName())
	copied.SetNamespace(namespace)
	copied.SetLabels(map[string]string{r.SourceLabel: source.GetLabels()[r.SourceLabel],
		"app.kubernetes.io/managed-by": managedBy})
	r.kind.sync(source, copied)
	return copied
}

// SetupWithManager reconciles a source when it, one of its copies, or a namespace changes.
func (r *KitReconciler) SetupWithManager(mgr ctrl.Manager) error {
	toSource := func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{
			Namespace: r.SourceNamespace, Name: o.GetName()}}}
	}
	allSources := func(ctx context.Context, _ client.Object) []reconcile.Request {
		list := r.kind.list()
		if err := r.List(ctx, list, client.InNamespace(r.SourceNamespace)); err != nil {
			return nil
		}
		var requests []reconcile.Request
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if object, ok := o.(client.Object); ok {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(object)})
			}
			return nil
		})
		return requests
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("kit-"+r.kind.name).
		Watches(r.kind.object(), handler.EnqueueRequestsFromMapFunc(toSource)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(allSources)).
		Complete(r)
}
