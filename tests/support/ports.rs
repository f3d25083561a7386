//! Loopback ports for servers a test starts in another process (skiff's probes and metrics,
//! etcd, kube-apiserver), which must be named before that process binds them.
//!
//! A port from binding `127.0.0.1:0` comes from the kernel's ephemeral range, the range every
//! outgoing connection on the machine draws its local port from too. Between picking it and the
//! server's bind, a client connection (kube-apiserver to etcd, kubectl, skiff itself) can take
//! it, and the server fails with "address already in use". So ports are picked below that range,
//! where no connection lands, at random so that test processes running side by side rarely
//! pick the same one, never twice in one process, and each checked free when picked.

use std::collections::BTreeSet;
use std::hash::{BuildHasher as _, RandomState};
use std::net::TcpListener;
use std::sync::{LazyLock, Mutex};

/// The lowest port handed out: above the ports services commonly default to (etcd's 2379,
/// the kubelet's 10250 and its neighbours), which a test might start after picking.
const LOWEST: u16 = 20_000;

/// Where the ephemeral range starts when the kernel does not say (Linux's default).
const DEFAULT_EPHEMERAL_START: u16 = 32_768;

/// Tries before giving up: a loaded machine has some ports in use, not most.
const TRIES: usize = 1_000;

/// A loopback port that no other server holds and no outgoing connection will take.
pub fn free_port() -> Result<u16, String> {
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner());
    let (low, high) = (LOWEST, *EPHEMERAL_START);
    let random = RandomState::new();
    for attempt in 0..TRIES {
        let port = low + (random.hash_one(attempt) % u64::from(high - low)) as u16;
        if !handed_out.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed_out.insert(port);
            return Ok(port);
        }
    }
    Err(format!(
        "no free loopback port in {low}..{high} after {TRIES} tries"
    ))
}

/// Three distinct free loopback ports (etcd's client and peer ports and kube-apiserver's).
pub fn free_ports() -> Result<[u16; 3], String> {
    Ok([free_port()?, free_port()?, free_port()?])
}

/// The first port of the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), read once.
static EPHEMERAL_START: LazyLock<u16> = LazyLock::new(|| {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .filter(|&start| start > LOWEST + 1_000)
        .unwrap_or(DEFAULT_EPHEMERAL_START)
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_bindable_and_below_the_ephemeral_range() {
        let ports: Vec<u16> = (0..50).map(|_| free_port().expect("a port")).collect();
        let distinct: BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        for port in ports {
            assert!((LOWEST..*EPHEMERAL_START).contains(&port), "{port}");
            TcpListener::bind(("127.0.0.1", port)).expect("bindable");
        }
    }
}
