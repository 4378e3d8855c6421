// udpping: one small UDP datagram every few ms from a sender thread to a real-time
// receiver thread over loopback, each stamped with its send time (seed 002: a reply
// that waits because the softirq that carries it waits).
//
//   udpping [--tx-cpu C] [--rx-cpu R] [--rx-fifo PRIO] [--tx-fifo PRIO] [--every-us P]
//           [--count N] [--log FILE]
//
// The sender (thread "udpping-tx", pinned to C, SCHED_FIFO PRIO when given) sends datagram
// i at start + i*P with sendto(); one that falls behind that schedule (a busy CPU C) sends
// the overdue datagrams back to back, so --tx-fifo keeps the probe's traffic the same
// whatever else runs on C. The receiver ("udpping-rx", pinned to R, SCHED_FIFO PRIO when given) blocks in
// recvfrom(). With Receive Packet Steering on lo set to R, every datagram crosses to R and
// is delivered by the NET_RX softirq there. Each datagram carries its sequence number and
// the sender's CLOCK_MONOTONIC time just before sendto(); the receiver reads the clock
// just after recvfrom() returns. That is the program's own per-packet truth:
//
//   log line: seq send_ns recv_ns latency_ns      (latency -1: never arrived)
//
// Prints `sent N received M late_over_1ms K max_us X` at the end.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct stamp {
    uint64_t seq;
    uint64_t send_ns;
};

static long tx_cpu = 0, rx_cpu = 1, rx_fifo = 0, tx_fifo = 0, every_us = 2000, count = 1000;
static int tx_fd, rx_fd;
static uint64_t *send_ns, *recv_ns;
static volatile int rx_ready;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void pin(long cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET((int)cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) perror("udpping: sched_setaffinity");
}

static void fifo(long prio) {
    if (prio <= 0) return;
    struct sched_param p = {.sched_priority = (int)prio};
    if (sched_setscheduler(0, SCHED_FIFO, &p)) perror("udpping: SCHED_FIFO (root?)");
}

static void *receiver(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "udpping-rx");
    pin(rx_cpu);
    fifo(rx_fifo);
    // On its CPU with its policy: from here it runs as soon as it is woken.
    __atomic_store_n(&rx_ready, 1, __ATOMIC_RELEASE);
    for (;;) {
        struct stamp s;
        ssize_t n = recvfrom(rx_fd, &s, sizeof s, 0, NULL, NULL);
        uint64_t t = now_ns();
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break; // quiet for 1 s: done
        if (n != (ssize_t)sizeof s || s.seq >= (uint64_t)count) continue;
        recv_ns[s.seq] = t;
        if (s.seq == (uint64_t)count - 1) break;
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *log = NULL;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "udpping: %s needs a value\n", a); return 2; }
        if (!strcmp(a, "--tx-cpu")) tx_cpu = atol(v);
        else if (!strcmp(a, "--rx-cpu")) rx_cpu = atol(v);
        else if (!strcmp(a, "--rx-fifo")) rx_fifo = atol(v);
        else if (!strcmp(a, "--tx-fifo")) tx_fifo = atol(v);
        else if (!strcmp(a, "--every-us")) every_us = atol(v);
        else if (!strcmp(a, "--count")) count = atol(v);
        else if (!strcmp(a, "--log")) log = v;
        else { fprintf(stderr, "udpping: unknown option %s\n", a); return 2; }
    }
    if (count < 1 || every_us < 1) { fprintf(stderr, "udpping: --count and --every-us must be > 0\n"); return 2; }
    send_ns = calloc((size_t)count, sizeof *send_ns);
    recv_ns = calloc((size_t)count, sizeof *recv_ns);
    rx_fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (rx_fd < 0 || bind(rx_fd, (struct sockaddr *)&addr, sizeof addr) ||
        getsockname(rx_fd, (struct sockaddr *)&addr, &len)) {
        perror("udpping: bind");
        return 1;
    }
    struct timeval quiet = {1, 0};
    setsockopt(rx_fd, SOL_SOCKET, SO_RCVTIMEO, &quiet, sizeof quiet);
    tx_fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (tx_fd < 0) { perror("udpping: socket"); return 1; }
    pthread_t rx;
    if (pthread_create(&rx, NULL, receiver, NULL)) { perror("udpping: pthread_create"); return 1; }
    prctl(PR_SET_NAME, "udpping-tx");
    pin(tx_cpu);
    fifo(tx_fifo);
    // The receiver first needs its CPU, which a hog may hold for a long time before it
    // is real-time: wait until it is, then give it time to block in recvfrom.
    while (!__atomic_load_n(&rx_ready, __ATOMIC_ACQUIRE)) usleep(1000);
    usleep(20000);
    uint64_t start = now_ns();
    for (long i = 0; i < count; i++) {
        uint64_t at = start + (uint64_t)i * (uint64_t)every_us * 1000u;
        struct timespec ts = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        struct stamp s = {(uint64_t)i, now_ns()};
        send_ns[i] = s.send_ns;
        if (sendto(tx_fd, &s, sizeof s, 0, (struct sockaddr *)&addr, sizeof addr) != (ssize_t)sizeof s)
            perror("udpping: sendto");
    }
    pthread_join(rx, NULL);
    FILE *f = log ? fopen(log, "w") : NULL;
    if (log && !f) { perror(log); return 1; }
    long got = 0, late = 0;
    uint64_t max = 0;
    for (long i = 0; i < count; i++) {
        int64_t lat = recv_ns[i] ? (int64_t)(recv_ns[i] - send_ns[i]) : -1;
        if (lat >= 0) {
            got++;
            late += lat > 1000000;
            if ((uint64_t)lat > max) max = (uint64_t)lat;
        }
        if (f) fprintf(f, "%ld %llu %llu %lld\n", i, (unsigned long long)send_ns[i],
                       (unsigned long long)recv_ns[i], (long long)lat);
    }
    if (f) fclose(f);
    printf("sent %ld received %ld late_over_1ms %ld max_us %llu\n", count, got, late,
           (unsigned long long)(max / 1000));
    return 0;
}
