// periodic: a thread that wakes on an absolute-deadline period (seed 004's 1.33 ms hrtimer)
// and logs how late each wakeup was, as ground truth for `whylate latency --measure timer`.
//
//   periodic [--period-us N] [--count N] [--cpu C] [--fifo PRIO] [--nice N] [--log FILE]
//
// --nice 19 makes a SCHED_OTHER victim that a same-CPU hog delays reliably: under EEVDF a
// nice-0 sleeper usually preempts the hog on wakeup, so lateness would depend on luck.
//
// Each log line: `<target_ns> <woke_ns> <late_ns>` in CLOCK_MONOTONIC, the clock the
// hrtimer's `expires`/`now` use, so a trace can be matched period by period. Timer slack is
// set to 1 ns so the kernel's softexpires is the requested time.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

static long long ns(const struct timespec *t) { return t->tv_sec * 1000000000LL + t->tv_nsec; }

int main(int argc, char **argv) {
    long period_us = 1330, count = 300, cpu = -1, fifo = 0, nice = 0;
    const char *log = "periodic.log";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "periodic: %s needs a value\n", a); return 2; }
        if (!strcmp(a, "--period-us")) period_us = atol(v);
        else if (!strcmp(a, "--count")) count = atol(v);
        else if (!strcmp(a, "--cpu")) cpu = atol(v);
        else if (!strcmp(a, "--fifo")) fifo = atol(v);
        else if (!strcmp(a, "--nice")) nice = atol(v);
        else if (!strcmp(a, "--log")) log = v;
        else { fprintf(stderr, "periodic: unknown option %s\n", a); return 2; }
        i++;
    }
    if (period_us <= 0 || count <= 0) { fprintf(stderr, "periodic: bad period or count\n"); return 2; }
    prctl(PR_SET_NAME, "periodic");
    prctl(PR_SET_TIMERSLACK, 1UL);
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set)) { perror("periodic: sched_setaffinity"); return 1; }
    }
    if (nice && setpriority(PRIO_PROCESS, 0, (int)nice)) { perror("periodic: setpriority"); return 1; }
    if (fifo > 0) {
        struct sched_param p = {.sched_priority = (int)fifo};
        if (sched_setscheduler(0, SCHED_FIFO, &p)) { perror("periodic: SCHED_FIFO"); return 1; }
    }
    FILE *out = fopen(log, "w");
    if (!out) { perror(log); return 1; }
    long long *target = calloc(count, sizeof *target), *woke = calloc(count, sizeof *woke);
    if (!target || !woke) return 1;
    // Touch and lock every page now: a first-touch page fault inside the loop would add
    // time the thread measures but the scheduler trace cannot show.
    memset(target, 1, count * sizeof *target);
    memset(woke, 1, count * sizeof *woke);
    mlockall(MCL_CURRENT | MCL_FUTURE);
    struct timespec next, now;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long i = 0; i < count; i++) {
        next.tv_nsec += period_us * 1000;
        while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
        int r;
        while ((r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL)) == EINTR) {}
        if (r) { fprintf(stderr, "periodic: clock_nanosleep: %s\n", strerror(r)); return 1; }
        clock_gettime(CLOCK_MONOTONIC, &now);
        target[i] = ns(&next);
        woke[i] = ns(&now);
    }
    // Logged after the loop so file writes do not disturb the timing being measured.
    for (long i = 0; i < count; i++)
        fprintf(out, "%lld %lld %lld\n", target[i], woke[i], woke[i] - target[i]);
    fclose(out);
    return 0;
}
