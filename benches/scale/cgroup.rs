//! A memory cgroup with a hard limit, as a pod's memory limit is enforced: a child of the
//! benchmark's own cgroup (cgroup v2, or the v1 memory controller), so the operator it runs is
//! OOM-killed where the kubelet's limit would kill it, and its peak is read as the kernel counts
//! it (resident pages and the page cache it caused).

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct MemoryCgroup {
    dir: PathBuf,
    v2: bool,
}

impl MemoryCgroup {
    /// A new cgroup limited to `limit` bytes, or why none could be made (no writable memory
    /// controller: not root, or a container without one).
    pub fn new(name: &str, limit: u64) -> Result<MemoryCgroup, String> {
        let (parent, v2) = own_memory_cgroup()?;
        let dir = parent.join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let cgroup = MemoryCgroup { dir, v2 };
        let limit_file = if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        cgroup.write(limit_file, &limit.to_string())?;
        if v2 {
            // No swap either, as a pod without swap: the limit is on memory alone.
            let _ = cgroup.write("memory.swap.max", "0");
        }
        Ok(cgroup)
    }

    /// `program args…`, started inside the cgroup: a shell moves itself in, then execs.
    pub fn command(&self, program: &Path) -> Command {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(r#"echo $$ > "$0" && exec "$@""#)
            .arg(self.dir.join("cgroup.procs"))
            .arg(program);
        command
    }

    /// The peak memory the cgroup was charged, in KiB.
    pub fn peak_kib(&self) -> Option<u64> {
        let file = if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        let text = std::fs::read_to_string(self.dir.join(file)).ok()?;
        text.trim().parse::<u64>().ok().map(|b| b / 1024)
    }

    /// How many times the kernel OOM-killed a process of the cgroup.
    pub fn oom_kills(&self) -> u64 {
        let (file, field) = if self.v2 {
            ("memory.events", "oom_kill")
        } else {
            ("memory.oom_control", "oom_kill")
        };
        let text = std::fs::read_to_string(self.dir.join(file)).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix(field)?.trim().parse().ok())
            .unwrap_or(0)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).map_err(|e| format!("write {}: {e}", path.display()))
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The directory of this process's memory cgroup, and whether it is cgroup v2.
fn own_memory_cgroup() -> Result<(PathBuf, bool), String> {
    let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    for line in own.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next(), fields.next(), fields.next());
        let path = path.unwrap_or_default().trim_start_matches('/');
        let v1 = controllers.is_some_and(|c| c.split(',').any(|c| c == "memory"));
        let dir = if v1 {
            Path::new("/sys/fs/cgroup/memory").join(path)
        } else if controllers == Some("") {
            Path::new("/sys/fs/cgroup").join(path)
        } else {
            continue;
        };
        let v2 = !v1;
        if v2 && !dir.join("memory.max").exists() && !dir.join("cgroup.subtree_control").exists() {
            continue;
        }
        if dir.is_dir() {
            return Ok((dir, v2));
        }
    }
    Err("no memory cgroup of this process found under /sys/fs/cgroup".into())
}
