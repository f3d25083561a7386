// skiff-peer: the controller-runtime operator skiff is compared with (`make compare`).
//
// It does skiff's job in its simplest form, the way kubebuilder scaffolds an operator: a
// manager with leader election (LeaderElectionReleaseOnCancel), healthz, and one reconciler that
// copies each labelled source ConfigMap into every namespace a label selector picks. Writes
// happen only when a copy is missing or differs, so a restart with nothing changed writes 0.
// With --kit it stamps the namespace kit instead (kit.go).
//
// Its metrics are served as kubebuilder scaffolds them: with --metrics-bind-address set, over
// HTTPS (a self-signed certificate, HTTP/2 off) to callers the API server authenticates and
// authorizes (filters.WithAuthenticationAndAuthorization); --metrics-secure=false for plain HTTP.
//
// --variant picks how the clients are configured:
//
//	scaffold         as kubebuilder scaffolds it: one rest.Config, QPS/burst on it; the
//	                 leader-election client is derived from it (same transport, own limiter).
//	shared-limiter   as in the incident: rest.Config.RateLimiter set, so the lease client shares
//	                 the controller's token bucket.
//	dedicated-lease  the incident's fix: shared-limiter plus LeaderElectionConfig, a copied
//	                 config with its own dialer (own connections), QPS 5 / burst 10.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const managedBy = "skiff-peer"

type options struct {
	variant, leaseID, leaseNamespace, probeAddr, metricsAddr    string
	sourceNamespace, sourceLabel, namespaceSelector             string
	leaderElect, cacheAllNamespaces, metricsSecure, enableHTTP2 bool
	kit                                                         bool
	qps                                                         float64
	burst                                                       int
	leaseDuration, renewDeadline, retryPeriod                   time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.variant, "variant", "scaffold", "scaffold, shared-limiter or dedicated-lease")
	flag.BoolVar(&o.leaderElect, "leader-elect", false, "enable leader election")
	flag.StringVar(&o.leaseID, "leader-election-id", "skiff-peer-leader", "Lease name")
	flag.StringVar(&o.leaseNamespace, "leader-election-namespace", "skiff-peer", "Lease namespace")
	flag.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "")
	flag.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "")
	flag.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "")
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", "0", "0 disables")
	flag.BoolVar(&o.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS with authn/authz")
	flag.BoolVar(&o.enableHTTP2, "enable-http2", false, "allow HTTP/2 on the metrics server")
	flag.Float64Var(&o.qps, "kube-api-qps", 20, "")
	flag.IntVar(&o.burst, "kube-api-burst", 30, "")
	flag.StringVar(&o.sourceNamespace, "source-namespace", "skiff-peer", "where sources live")
	flag.StringVar(&o.sourceLabel, "source-label", "skiff-peer.dev/source",
		"label key marking sources (and their copies, which carry the same value)")
	flag.StringVar(&o.namespaceSelector, "namespace-selector", "skiff-peer.dev/target=true",
		"label selector of the namespaces copies go to")
	flag.BoolVar(&o.cacheAllNamespaces, "cache-all-namespaces", false,
		"cache every Namespace, not only the selected ones, as an operator whose objects each "+
			"carry their own selector must (the reconciler still copies to the selected ones only)")
	flag.BoolVar(&o.kit, "kit", false,
		"stamp the namespace kit (NetworkPolicy, LimitRange, ResourceQuota, RoleBinding sources "+
			"with the source label) instead of copying ConfigMaps")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := run(o); err != nil {
		ctrl.Log.Error(err, "exiting")
		os.Exit(1)
	}
}

func run(o options) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	selector, err := labels.Parse(o.namespaceSelector)
	if err != nil {
		return fmt.Errorf("--namespace-selector: %w", err)
	}
	sources, err := labels.Parse(o.sourceLabel)
	if err != nil {
		return fmt.Errorf("--source-label: %w", err)
	}
	byObject := map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Label: sources},
		&corev1.Namespace{}: {Label: namespaceCache(selector, o.cacheAllNamespaces)},
	}
	if o.kit {
		kitCache(byObject, sources)
	}
	mgrOpts := ctrl.Options{
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              o.leaseID,
		LeaderElectionNamespace:       o.leaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
		RetryPeriod:                   &o.retryPeriod,
		HealthProbeBindAddress:        o.probeAddr,
		Metrics:                       metricsOptions(o),
		// Cache only what the reconciler reads: sources and copies, and the selected namespaces.
		Cache: cache.Options{ByObject: byObject},
	}
	switch o.variant {
	case "scaffold":
	case "shared-limiter":
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	case "dedicated-lease":
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
		lease := rest.CopyConfig(cfg)
		lease.RateLimiter, lease.QPS, lease.Burst = nil, 5, 10
		// A Dial of its own keeps client-go from sharing the cached transport (connections).
		lease.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		mgrOpts.LeaderElectionConfig = lease
	default:
		return fmt.Errorf("--variant %q: use scaffold, shared-limiter or dedicated-lease", o.variant)
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return err
	}
	if o.kit {
		err = setupKit(mgr, o, selector)
	} else {
		r := &CopyReconciler{Client: mgr.GetClient(), SourceNamespace: o.sourceNamespace,
			SourceLabel: o.sourceLabel, Namespaces: selector}
		err = r.SetupWithManager(mgr)
	}
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// CopyReconciler keeps a copy of each source ConfigMap in every selected namespace.
type CopyReconciler struct {
	client.Client
	SourceNamespace, SourceLabel string
	Namespaces                   labels.Selector
}

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

func (r *CopyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var source corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &source); err != nil {
		// A missing source leaves its copies as they are.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, eachTarget(ctx, r.Client, r.Namespaces, r.SourceNamespace, func(ns string) error {
		return r.ensureCopy(ctx, &source, ns)
	})
}

// eachTarget calls ensure for every selected namespace but the sources' own, stopping at the
// first error.
func eachTarget(ctx context.Context, c client.Client, selector labels.Selector, sourceNamespace string,
	ensure func(namespace string) error) error {
	var namespaces corev1.NamespaceList
	if err := c.List(ctx, &namespaces, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return err
	}
	for _, ns := range namespaces.Items {
		if ns.Name == sourceNamespace || ns.DeletionTimestamp != nil {
			continue
		}
		if err := ensure(ns.Name); err != nil {
			return err
		}
	}
	return nil
}

func (r *CopyReconciler) ensureCopy(ctx context.Context, source *corev1.ConfigMap, namespace string) error {
	var existing corev1.ConfigMap
	err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: source.Name}, &existing)
	switch {
	case apierrors.IsNotFound(err):
		return r.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: ctrl.ObjectMeta{Name: source.Name, Namespace: namespace, Labels: map[string]string{
				r.SourceLabel: source.Labels[r.SourceLabel], "app.kubernetes.io/managed-by": managedBy}},
			Data: source.Data, BinaryData: source.BinaryData,
		})
	case err != nil:
		return err
	case existing.Labels["app.kubernetes.io/managed-by"] != managedBy:
		return nil // not ours: never touched
	case maps.Equal(existing.Data, source.Data) && maps.EqualFunc(existing.BinaryData, source.BinaryData, bytes.Equal):
		return nil
	}
	existing.Data, existing.BinaryData = source.Data, source.BinaryData
	return r.Update(ctx, &existing)
}

// SetupWithManager reconciles a source when it, one of its copies, or a namespace changes.
func (r *CopyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	toSource := func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{
			Namespace: r.SourceNamespace, Name: o.GetName()}}}
	}
	allSources := func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list corev1.ConfigMapList
		if err := r.List(ctx, &list, client.InNamespace(r.SourceNamespace)); err != nil {
			return nil
		}
		requests := make([]reconcile.Request, 0, len(list.Items))
		for _, cm := range list.Items {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cm)})
		}
		return requests
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("configmap-copy").
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(toSource)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(allSources)).
		Complete(r)
}

// namespaceCache is the label selector of the Namespace cache: the selected namespaces, or every
// namespace (nil) with --cache-all-namespaces.
func namespaceCache(selector labels.Selector, all bool) labels.Selector {
	if all {
		return nil
	}
	return selector
}

// metricsOptions is kubebuilder's scaffold: HTTPS with a self-signed certificate, HTTP/2 off
// (its Rapid Reset and Stream Cancellation advisories), and the authn/authz filter.
func metricsOptions(o options) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.metricsSecure}
	if !o.enableHTTP2 {
		opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	if o.metricsSecure {
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return opts
}
