//! Where the CPU went during a run: busy ticks of the machine, this process, the
//! database servers, RabbitMQ and Redis, read from `/proc`.

/// Busy CPU ticks (1 tick = 10 ms) of the whole machine, of this process, of the
/// database servers, of the broker and of Redis.
#[derive(Clone, Copy, Default)]
pub struct Ticks {
    pub machine: u64,
    pub own: u64,
    pub db: u64,
    pub broker: u64,
    pub redis: u64,
}

impl Ticks {
    pub fn plus(self, other: Ticks) -> Ticks {
        Ticks {
            machine: self.machine + other.machine,
            own: self.own + other.own,
            db: self.db + other.db,
            broker: self.broker + other.broker,
            redis: self.redis + other.redis,
        }
    }

    pub fn since(self, before: Ticks) -> Ticks {
        Ticks {
            machine: self.machine.saturating_sub(before.machine),
            own: self.own.saturating_sub(before.own),
            db: self.db.saturating_sub(before.db),
            broker: self.broker.saturating_sub(before.broker),
            redis: self.redis.saturating_sub(before.redis),
        }
    }
}

/// utime + stime of a `/proc/<pid>/stat` line.
fn stat_ticks(stat: &str) -> Option<u64> {
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) are 11 and 12 after the name (field 3 is 0).
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

pub fn cpu_ticks() -> Ticks {
    let machine = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            let cpu = s.lines().next()?.to_owned();
            // user nice system idle iowait irq softirq steal: busy = all but idle, iowait.
            let f: Vec<u64> = cpu
                .split_whitespace()
                .skip(1)
                .filter_map(|x| x.parse().ok())
                .collect();
            Some(f.iter().sum::<u64>() - f.get(3).unwrap_or(&0) - f.get(4).unwrap_or(&0))
        })
        .unwrap_or(0);
    let own = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| stat_ticks(&s))
        .unwrap_or(0);
    let mut t = Ticks {
        machine,
        own,
        ..Ticks::default()
    };
    // PostgreSQL backends are processes of their own: sum every one (a backend that
    // exits during a level takes its ticks with it; the pools keep theirs open).
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let path = entry.path();
        let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
            continue;
        };
        let slot = match comm.trim() {
            "mariadbd" | "mysqld" | "postgres" => &mut t.db,
            "beam.smp" => &mut t.broker,
            "redis-server" => &mut t.redis,
            _ => continue,
        };
        *slot += std::fs::read_to_string(path.join("stat"))
            .ok()
            .and_then(|s| stat_ticks(&s))
            .unwrap_or(0);
    }
    t
}

/// Milliseconds of CPU per `per` units of work (1 tick = 10 ms).
pub fn ms_per(ticks: u64, work: usize, per: usize) -> f64 {
    if work == 0 {
        return 0.0;
    }
    ticks as f64 * 10.0 * per as f64 / work as f64
}
