#!/bin/sh
# Regenerates the bundled recordings (root, perf, zstd, a C compiler, 2+ CPUs):
#   frob, softirq, softirq-mitigated, timer  with `whylate demo ... --keep` (whylate record)
#   frob.perf                                with `perf record -a` around lab/frob
# each compressed with zstd, beside the lab program's own per-cycle log (.truth). Then
# bless the expected summaries: WHYLATE_BLESS=1 cargo test -p whylate-cli --test examples
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
cargo build --release -q -p whylate-cli
W=$PWD/target/release/whylate
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
keep() { # name, demo args...
  name=$1; shift
  "$W" demo "$@" --keep "$tmp/$name.dat" >/dev/null
  zstd -19 -q -f "$tmp/$name.dat" -o "$here/$name.dat.zst"
  cp "$tmp/$name.truth" "$here/$name.truth"
  echo "$name: $(wc -l < "$here/$name.truth") cycles, $(du -k "$here/$name.dat.zst" | cut -f1) KiB"
}
if [ "${ONLY_PERF:-}" != 1 ]; then
  keep frob frob
  keep timer timer
  keep softirq softirq
  keep softirq-mitigated softirq --mitigate
fi

# perf record: the same frob run (the tty work kept on the device's CPU, as the demo does).
# --exclude-perf keeps perf's own writes (571 k wakeup writes in 3 s) out of the trace.
cc -O2 -o "$tmp/frob" lab/frob.c
mask=/sys/devices/virtual/workqueue/cpumask
old=$(cat $mask)
# perf mounts tracefs for tracepoints and leaves it mounted: undo that too.
traced=$(grep -c ' tracefs ' /proc/mounts || true)
trap 'echo "$old" > $mask; [ "$traced" = 0 ] && umount /sys/kernel/tracing 2>/dev/null; rm -rf "$tmp"' EXIT
echo 2 > $mask
perf record -q -a -m 8M -o "$tmp/perf.data" \
  -e sched:sched_switch,sched:sched_waking,sched:sched_wakeup,sched:sched_wakeup_new \
  -e sched:sched_migrate_task,sched:sched_process_fork,sched:sched_process_exit \
  -e irq:irq_handler_entry,irq:irq_handler_exit,irq:softirq_raise,irq:softirq_entry,irq:softirq_exit \
  -e workqueue:workqueue_queue_work,workqueue:workqueue_activate_work \
  -e workqueue:workqueue_execute_start,workqueue:workqueue_execute_end \
  -e syscalls:sys_enter_write --exclude-perf -e syscalls:sys_exit_read --filter 'ret > 0' \
  -- "$tmp/frob" --cycles 300 --client-cpu 0 --device-cpu 1 --hog-cpu 1 --hogs 2 \
     --log "$tmp/frob.perf.truth" --complaints "$tmp/frobnicator.log" >/dev/null
echo "$old" > $mask
zstd -19 -q -f "$tmp/perf.data" -o "$here/frob.perf.data.zst"
cp "$tmp/frob.perf.truth" "$here/frob.perf.truth"
echo "frob.perf: $(wc -l < "$here/frob.perf.truth") cycles, $(du -k "$here/frob.perf.data.zst" | cut -f1) KiB"
