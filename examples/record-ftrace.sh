#!/bin/sh
# Records examples/pty-poll.ftrace.gz: raw tracefs `trace` text of lab/ptypoll.py with a CPU
# hog, on the machine it runs on. Uses a private tracefs instance, so the global tracer
# is never touched, and removes it on exit (also on error or Ctrl-C). Needs root.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
T=/sys/kernel/tracing
mounted=
if [ ! -e "$T/instances" ]; then mount -t tracefs nodev "$T"; mounted=1; fi
I="$T/instances/whylate-example-$$"
cleanup() {
  [ -d "$I" ] && { echo 0 > "$I/tracing_on"; rmdir "$I"; }
  [ -n "$mounted" ] && umount "$T"
  return 0
}
trap cleanup EXIT INT TERM
mkdir "$I"
echo 16384 > "$I/buffer_size_kb"
echo 1 > "$I/options/record-tgid"
for e in sched/sched_switch sched/sched_waking sched/sched_wakeup sched/sched_wakeup_new \
         sched/sched_migrate_task sched/sched_process_fork sched/sched_process_exec \
         sched/sched_process_exit irq/irq_handler_entry irq/irq_handler_exit irq/softirq_raise \
         irq/softirq_entry irq/softirq_exit workqueue timer/hrtimer_start \
         timer/hrtimer_expire_entry timer/hrtimer_expire_exit timer/hrtimer_cancel \
         syscalls/sys_enter_write syscalls/sys_exit_write syscalls/sys_enter_read syscalls/sys_exit_read; do
  echo 1 > "$I/events/$e/enable"
done
echo 1 > "$I/tracing_on"
python3 "$here/../lab/ptypoll.py" --duration "${DURATION:-0.4}" --hog --log "$here/pty-poll.cycles"
echo 0 > "$I/tracing_on"
cat "$I/trace" > "$here/pty-poll.ftrace.tmp"
gzip -9 -c "$here/pty-poll.ftrace.tmp" > "$here/pty-poll.ftrace.gz"
rm -f "$here/pty-poll.ftrace.tmp"
echo "wrote $here/pty-poll.ftrace.gz"
