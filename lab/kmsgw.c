// kmsgw: writes error-level lines to /dev/kmsg, as a driver's printk flood would log them
// (seeds 001 and 004). With a serial console (console=ttyS0) and a console log level
// above 3, printk prints each line to the console from this writer's own write() with
// interrupts off, and a periodic thread on the same CPU sees its timer fire late.
//
//   kmsgw [--cpu C] [--count N] [--bytes B] [--interval-us U] [--tag TEXT]
//
// Each line is `<3>TAG n` padded with '.' to B bytes of text (the newline not counted).
// Needs root, and /proc/sys/kernel/printk_devkmsg = on (the default ratelimit lets 10
// lines through per 5 s). Prints how many lines it wrote and its slowest write().
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    long cpu = -1, count = 20, bytes = 119, interval_us = 20000;
    const char *tag = "kmsgw";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "kmsgw: %s needs a value\n", a); return 2; }
        if (!strcmp(a, "--cpu")) cpu = atol(v);
        else if (!strcmp(a, "--count")) count = atol(v);
        else if (!strcmp(a, "--bytes")) bytes = atol(v);
        else if (!strcmp(a, "--interval-us")) interval_us = atol(v);
        else if (!strcmp(a, "--tag")) tag = v;
        else { fprintf(stderr, "kmsgw: unknown option %s\n", a); return 2; }
        i++;
    }
    if (count <= 0 || bytes < 8 || bytes > 900 || interval_us < 0) {
        fprintf(stderr, "kmsgw: bad count, bytes (8-900) or interval\n");
        return 2;
    }
    prctl(PR_SET_NAME, "kmsgw");
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set)) { perror("kmsgw: sched_setaffinity"); return 1; }
    }
    int fd = open("/dev/kmsg", O_WRONLY);
    if (fd < 0) { perror("kmsgw: /dev/kmsg"); return 1; }
    char line[1024];
    long long slowest = 0;
    long written = 0;
    for (long i = 0; i < count; i++) {
        int n = snprintf(line, sizeof line, "<3>%s %ld ", tag, i);
        // `<3>` is not part of the logged text: pad the text itself to `bytes`.
        while (n - 3 < bytes) line[n++] = '.';
        line[n++] = '\n';
        long long t0 = now_ns();
        // One write() is one record.
        if (write(fd, line, n) != n) { perror("kmsgw: write"); return 1; }
        long long d = now_ns() - t0;
        if (d > slowest) slowest = d;
        written++;
        struct timespec s = {interval_us / 1000000, (interval_us % 1000000) * 1000};
        nanosleep(&s, NULL);
    }
    close(fd);
    printf("%ld lines, slowest write %lld ns\n", written, slowest);
    return 0;
}
