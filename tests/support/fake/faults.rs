//! Fault injection by request class: what the next requests of a class suffer, and for how many.

use std::time::Duration;

/// Which requests a fault applies to. `Lease` is any path containing "/leases".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestClass {
    Lease,
    Other,
    All,
    /// Requests whose path and query (`path?query`) contain this text: one kind of request,
    /// e.g. the later pages of one collection's list. Only for faults; no request is of it.
    Matching(&'static str),
}

impl RequestClass {
    /// The class of a request path (never `All`).
    pub fn of_path(path: &str) -> RequestClass {
        if path.contains("/leases") {
            RequestClass::Lease
        } else {
            RequestClass::Other
        }
    }

    fn covers(self, class: RequestClass, target: &str) -> bool {
        match self {
            RequestClass::All => true,
            RequestClass::Matching(text) => target.contains(text),
            _ => self == class,
        }
    }
}

/// What happens to a faulted request.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Answer normally after this delay.
    Delay(Duration),
    /// Answer normally once this gate closes (the test closes or drops its sender): a reply
    /// held back exactly until the test has seen what it waits for, however slow the machine.
    Hold(smol::channel::Receiver<()>),
    /// 429 Status with a Retry-After header.
    TooManyRequests { retry_after_secs: u64 },
    /// 500 Status.
    ServerError,
    /// 401 Status, as for an expired token.
    Unauthorized,
    /// Read the request, never answer; hold the socket until the client or the server gives up.
    Stall,
    /// Close the connection without answering.
    Reset,
    /// Send the head and part of the body, then close the connection.
    ResetMidBody,
    /// Send a chunked 200 whose one chunk holds half a JSON line, then close.
    TruncatedChunk,
    /// 200 with content-type application/json and a body that is not JSON.
    Garbage,
}

struct Rule {
    class: RequestClass,
    fault: Fault,
    remaining: Option<usize>,
}

/// The active rules; the most recently set one wins.
#[derive(Default)]
pub struct FaultRules(Vec<Rule>);

impl FaultRules {
    /// Sets a fault for a class, replacing an earlier one for the same class.
    pub fn set(&mut self, class: RequestClass, fault: Fault, times: Option<usize>) {
        self.0.retain(|rule| rule.class != class);
        if times != Some(0) {
            self.0.insert(
                0,
                Rule {
                    class,
                    fault,
                    remaining: times,
                },
            );
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// The fault for an arriving request of `class` to `target` (`path?query`), counting down
    /// limited rules.
    pub fn take(&mut self, class: RequestClass, target: &str) -> Option<Fault> {
        let index = self
            .0
            .iter()
            .position(|rule| rule.class.covers(class, target))?;
        let rule = &mut self.0[index];
        let fault = rule.fault.clone();
        if let Some(remaining) = &mut rule.remaining {
            *remaining -= 1;
            if *remaining == 0 {
                self.0.remove(index);
            }
        }
        Some(fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limited_faults_count_down_per_class() {
        let mut rules = FaultRules::default();
        rules.set(RequestClass::Lease, Fault::ServerError, Some(1));
        assert!(rules.take(RequestClass::Other, "/api").is_none());
        assert!(matches!(
            rules.take(RequestClass::Lease, "/leases"),
            Some(Fault::ServerError)
        ));
        assert!(rules.take(RequestClass::Lease, "/leases").is_none());
    }

    #[test]
    fn a_matching_fault_takes_only_requests_containing_its_text() {
        let mut rules = FaultRules::default();
        rules.set(
            RequestClass::Matching("continue="),
            Fault::ServerError,
            Some(1),
        );
        assert!(
            rules
                .take(RequestClass::Other, "/api/v1/namespaces?limit=2")
                .is_none()
        );
        let page = "/api/v1/namespaces?limit=2&continue=x";
        assert!(rules.take(RequestClass::Other, page).is_some());
        assert!(rules.take(RequestClass::Other, page).is_none());
    }
}
