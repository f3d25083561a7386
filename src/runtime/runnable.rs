//! A long-running part started each time this replica may act, and stopped when it may not
//! (the Mirror controller is one).
//!
//! It lives in the runtime, below both of its users: a controller says here how it starts, and
//! the manager starts and stops it each term of leadership without knowing what it is.

use std::future::Future;
use std::pin::Pin;

use crate::signal::Signal;

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A long-running part started each time this replica may act (e.g. the Mirror controller).
pub struct Runnable {
    name: String,
    start: Box<dyn Fn(Signal) -> BoxFuture + Send + Sync>,
}

impl Runnable {
    /// `start(stop)` must return once `stop` fires and its in-flight work has finished. It is
    /// called again for each term of leadership.
    pub fn new<F, Fut>(name: &str, start: F) -> Runnable
    where
        F: Fn(Signal) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Runnable {
            name: name.to_owned(),
            start: Box::new(move |stop| Box::pin(start(stop))),
        }
    }

    /// Its name, for logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One term's run, which returns once `stop` fires and its in-flight work has finished.
    pub fn start(&self, stop: Signal) -> impl Future<Output = ()> + Send + 'static {
        (self.start)(stop)
    }
}
