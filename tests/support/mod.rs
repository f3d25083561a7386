#![allow(dead_code)]
pub mod control_plane;
pub mod kubectl;
pub mod watchdog;
