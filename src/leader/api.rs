//! [`LeaseApi`] over the dedicated lease client: the one Lease, by name, in one namespace.
//!
//! The client given here must be the one built from `Config::for_leader_election()`: its own
//! connections and token bucket are what keep renewals flowing while controller traffic is
//! throttled.

use super::lock::LeaseApi;
use crate::clock::Clock;
use crate::kube::api::Lease;
use crate::kube::{Client, Error, Selectors, WatchEvent, WatchParams};
use smol::stream::Stream;
use std::pin::Pin;
use std::time::Instant;

pub type LeaseEvents = Pin<Box<dyn Stream<Item = Result<WatchEvent<Lease>, Error>> + Send>>;

pub struct ClientLeaseApi {
    client: Client,
    namespace: String,
    name: String,
    /// The elector's clock, which the deadlines given here are on.
    clock: Clock,
}

impl ClientLeaseApi {
    /// `client` must be the dedicated lease client, and carries Lease requests only (the
    /// "became leader" Event goes through the main client, see [`super::announce`]). The
    /// deadlines it is given are on `clock`, the elector's.
    pub fn new(client: Client, namespace: &str, name: &str, clock: Clock) -> ClientLeaseApi {
        ClientLeaseApi {
            client,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            clock,
        }
    }

    /// The client, its requests bounded by `deadline` on the elector's clock.
    fn by(&self, deadline: Instant) -> Client {
        self.client.with_deadline(self.clock.io_deadline(deadline))
    }

    fn with_namespace(&self, lease: &Lease) -> Lease {
        let mut lease = lease.clone();
        lease.metadata.namespace = Some(self.namespace.clone());
        lease
    }
}

impl LeaseApi for ClientLeaseApi {
    type Events = LeaseEvents;

    fn name(&self) -> &str {
        &self.name
    }

    async fn get(&self, deadline: Instant) -> Result<Lease, Error> {
        let client = self.by(deadline);
        client.get(Some(&self.namespace), &self.name).await
    }

    async fn create(&self, lease: &Lease, deadline: Instant) -> Result<Lease, Error> {
        let client = self.by(deadline);
        client.create(&self.with_namespace(lease)).await
    }

    async fn replace(&self, lease: &Lease, deadline: Instant) -> Result<Lease, Error> {
        let client = self.by(deadline);
        client.replace(&self.with_namespace(lease)).await
    }

    async fn watch(&self) -> Result<LeaseEvents, Error> {
        let params = WatchParams {
            selectors: Selectors::fields(&format!("metadata.name={}", self.name)),
            ..WatchParams::default()
        };
        let stream = self
            .client
            .watch::<Lease>(Some(&self.namespace), &params)
            .await?;
        Ok(Box::pin(smol::stream::unfold(stream, |mut s| async move {
            s.next().await.map(|item| (item, s))
        })))
    }
}
