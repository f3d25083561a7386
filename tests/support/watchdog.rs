//! Processes that die with the test process: etcd and kube-apiserver under a `sh` watchdog.
//!
//! Why: the shared control plane lives in a `static`, which is never dropped, and a test may
//! panic or be killed. Each process runs in the background of a small shell loop that kills it
//! within a second once the test process is gone; `Drop` kills the whole process group at once.

use std::fs::File;
use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::control_plane::bin_dir;

/// Runs the wrapped command in the background and kills it as soon as the test process
/// (`SKIFF_CP_PARENT`) is gone or the wrapper is told to stop; then removes `SKIFF_CP_CLEANUP`.
const WATCHDOG: &str = r#"
"$@" & child=$!
trap 'kill -KILL $child 2>/dev/null' TERM INT
while kill -0 "$SKIFF_CP_PARENT" 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 1; done
kill -KILL $child 2>/dev/null
wait $child
status=$?
# kubectl runs orphaned with the test process may still write their cache for a moment.
if [ -n "$SKIFF_CP_CLEANUP" ]; then sleep 2; rm -rf "$SKIFF_CP_CLEANUP"; fi
exit $status
"#;

/// A process started under the watchdog, as the leader of its own process group.
pub struct Supervised {
    name: &'static str,
    /// Behind a lock so that a control plane shared by `&'static` can still be stopped.
    wrapper: Mutex<Child>,
}

impl Supervised {
    /// Starts `bin/<name> args` with its output in `<dir>/<name>.log`; `cleanup`, if given, is
    /// removed by the watchdog once the process is gone (`Drop` of the owner removes it otherwise).
    pub fn spawn(
        name: &'static str,
        dir: &Path,
        args: &[String],
        cleanup: Option<&Path>,
    ) -> Result<Supervised, String> {
        Self::spawn_program(name, &bin_dir().join(name), dir, args, &[], cleanup)
    }

    /// As [`Supervised::spawn`], for any program, with extra environment variables.
    pub fn spawn_program(
        name: &'static str,
        program: &Path,
        dir: &Path,
        args: &[String],
        env: &[(&str, &str)],
        cleanup: Option<&Path>,
    ) -> Result<Supervised, String> {
        let log_path = dir.join(format!("{name}.log"));
        let log = File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let log_err = log
            .try_clone()
            .map_err(|e| format!("{}: {e}", log_path.display()))?;
        let mut command = Command::new("sh");
        command
            .args(["-c", WATCHDOG, "skiff-cp-watchdog"])
            .arg(program)
            .envs(env.iter().copied())
            .args(args)
            .env("SKIFF_CP_PARENT", std::process::id().to_string())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        if let Some(cleanup) = cleanup {
            command.env("SKIFF_CP_CLEANUP", cleanup);
        }
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let wrapper = command.spawn().map_err(|e| format!("start {name}: {e}"))?;
        Ok(Supervised {
            name,
            wrapper: Mutex::new(wrapper),
        })
    }

    /// Err with the exit status if the process has already ended.
    pub fn check_running(&mut self) -> Result<(), String> {
        match self.wrapper().try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!("{} exited ({status})", self.name)),
            Err(e) => Err(format!("{}: {e}", self.name)),
        }
    }

    /// The watchdog shell's pid (the supervised program is its only child).
    pub fn id(&self) -> u32 {
        self.wrapper().id()
    }

    /// The supervised program's pid: the watchdog shell's only child (None once it is gone).
    pub fn program_id(&self) -> Option<u32> {
        let shell = self.id();
        let children =
            std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).ok()?;
        children.split_whitespace().next()?.parse().ok()
    }

    /// Kills the process and its watchdog, if still running, and reaps the watchdog.
    pub fn kill(&self) {
        let mut wrapper = self.wrapper();
        if !matches!(wrapper.try_wait(), Ok(None)) {
            return;
        }
        // The wrapper leads the group, so this takes the process and its watchdog at once.
        let group = format!("-{}", wrapper.id());
        let killed = Command::new("sh")
            .args(["-c", "kill -s KILL -- \"$0\"", &group])
            .status();
        if !killed.as_ref().is_ok_and(|status| status.success()) {
            let _ = writeln!(
                std::io::stderr(),
                "control plane: could not kill process group {group} ({killed:?}); {} may live on",
                self.name
            );
            let _ = wrapper.kill();
        }
        let _ = wrapper.wait();
    }

    fn wrapper(&self) -> MutexGuard<'_, Child> {
        self.wrapper.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.kill();
    }
}
