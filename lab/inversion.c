// inversion: textbook priority inversion, as ground truth for wait-for chains.
//
//   inversion [--mitigate] [--seconds N] [--period-us N] [--hold-us N] [--deadline-us N]
//             [--log FILE]
//
// Three threads share one plain pthread mutex:
// - inv-waiter, SCHED_FIFO 50 on CPU0: every period (absolute clock_nanosleep) it takes the
//   mutex, works 20 us, lets it go, and sleeps again;
// - inv-holder, SCHED_OTHER on CPU1: takes the mutex, holds it --hold-us busy, lets it go,
//   works 100 us, again, all run long;
// - inv-rt, SCHED_FIFO 20 on CPU1: every 7 ms burns 1.5 ms. When that lands inside the
//   holder's hold while the waiter waits, the waiter waits for the middle-priority task.
// --mitigate makes the mutex PTHREAD_PRIO_INHERIT: the holder runs at the waiter's 50
// while it is waited for, and inv-rt cannot preempt it.
//
// Each log line is one period of the waiter: `<start_ns> <lock_wait_ns> <end_ns> <late>`,
// CLOCK_MONOTONIC, start when clock_nanosleep returned, end before the next one; late is 1
// when end - start passed --deadline-us. Written after the run.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock;
static atomic_int stop;
static long hold_us = 300;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void spin_us(long us) {
    long long end = now_ns() + us * 1000LL;
    while (now_ns() < end) {}
}

// Pins the calling thread to `cpu` with `policy` at `prio`, and names it.
static int place(const char *name, int cpu, int policy, int prio) {
    prctl(PR_SET_NAME, name);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set)) { perror("inversion: sched_setaffinity"); return -1; }
    struct sched_param p = {.sched_priority = prio};
    if (sched_setscheduler(0, policy, &p)) { perror("inversion: sched_setscheduler"); return -1; }
    return 0;
}

static void *holder(void *arg) {
    (void)arg;
    if (place("inv-holder", 1, SCHED_OTHER, 0)) exit(1);
    while (!atomic_load(&stop)) {
        pthread_mutex_lock(&lock);
        spin_us(hold_us);
        pthread_mutex_unlock(&lock);
        spin_us(100);
    }
    return NULL;
}

static void *rt(void *arg) {
    (void)arg;
    if (place("inv-rt", 1, SCHED_FIFO, 20)) exit(1);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!atomic_load(&stop)) {
        next.tv_nsec += 7000000L;
        while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {}
        spin_us(1500);
    }
    return NULL;
}

// What the run leaves to do once the waiter's last period has ended: stop the other
// threads, write the log, end the process (while the waiter sleeps its last sleep).
struct ending {
    pthread_t h, r;
    long count, deadline_us;
    long long *rec;
    FILE *out;
};

// Done in a thread of its own, so that the waiter's last period ends where the program's
// log ends it: joining the holder and inv-rt (which sleeps up to 7 ms) inside it made a
// period the program never counted.
static void *ender(void *arg) {
    struct ending *e = arg;
    prctl(PR_SET_NAME, "inv-end");
    atomic_store(&stop, 1);
    pthread_join(e->h, NULL);
    pthread_join(e->r, NULL);
    for (long i = 0; i < e->count; i++) {
        long long s = e->rec[3 * i], end = e->rec[3 * i + 2];
        fprintf(e->out, "%lld %lld %lld %d\n", s, e->rec[3 * i + 1], end,
                end - s > e->deadline_us * 1000LL);
    }
    fclose(e->out);
    _exit(0);
}

int main(int argc, char **argv) {
    long seconds = 3, period_us = 2000, deadline_us = 1000;
    int mitigate = 0;
    const char *log = "inversion.log";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--mitigate")) { mitigate = 1; continue; }
        if (!v) { fprintf(stderr, "inversion: %s needs a value\n", a); return 2; }
        if (!strcmp(a, "--seconds")) seconds = atol(v);
        else if (!strcmp(a, "--period-us")) period_us = atol(v);
        else if (!strcmp(a, "--hold-us")) hold_us = atol(v);
        else if (!strcmp(a, "--deadline-us")) deadline_us = atol(v);
        else if (!strcmp(a, "--log")) log = v;
        else { fprintf(stderr, "inversion: unknown option %s\n", a); return 2; }
        i++;
    }
    if (seconds <= 0 || period_us <= 0 || hold_us <= 0) { fprintf(stderr, "inversion: bad value\n"); return 2; }
    pthread_mutexattr_t at;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED);
    if (mitigate) pthread_mutexattr_setprotocol(&at, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&lock, &at);
    long count = seconds * 1000000L / period_us;
    long long *rec = calloc((size_t)count * 3, sizeof *rec);
    if (!rec) return 1;
    // Pages touched and locked now: a page fault in the loop is time the trace cannot show.
    memset(rec, 1, (size_t)count * 3 * sizeof *rec);
    mlockall(MCL_CURRENT | MCL_FUTURE);
    FILE *out = fopen(log, "w");
    if (!out) { perror(log); return 1; }
    pthread_t h, r;
    if (pthread_create(&h, NULL, holder, NULL) || pthread_create(&r, NULL, rt, NULL)) {
        fprintf(stderr, "inversion: pthread_create failed\n");
        return 1;
    }
    if (place("inv-waiter", 0, SCHED_FIFO, 50)) return 1;
    prctl(PR_SET_TIMERSLACK, 1UL);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long i = 0; i < count; i++) {
        next.tv_nsec += period_us * 1000;
        while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {}
        long long start = now_ns();
        pthread_mutex_lock(&lock);
        long long got = now_ns();
        spin_us(20);
        pthread_mutex_unlock(&lock);
        rec[3 * i] = start;
        rec[3 * i + 1] = got - start;
        rec[3 * i + 2] = now_ns();
    }
    // One more sleep closes the last period for a tracer, as every other one was closed;
    // the process ends inside it (inv-end exits it): that sleep's end, if traced, returns
    // an error (interrupted), which the demo's selector (ret=0) does not take as a
    // period's start.
    static struct ending e;
    e = (struct ending){h, r, count, deadline_us, rec, out};
    pthread_t end;
    if (pthread_create(&end, NULL, ender, &e)) return 1;
    struct timespec long_sleep = {10, 0};
    nanosleep(&long_sleep, NULL);
    return 0;
}
