// udpflood: a loopback UDP flood whose receive side, the NET_RX softirq, runs on another
// CPU (seeds 002/003: softirq work landing beside a latency-sensitive thread).
//
//   udpflood [--cpu C] [--rps-cpu R] [--seconds S] [--size BYTES] [--filter-insns N]
//            [--burst-us B --every-us P] [--burst-packets K] [--batch N] [--fifo PRIO]
//
// The sender, pinned to --cpu, sends batches of datagrams (sendmmsg) to a socket nobody
// reads. Loopback receives a packet on the sending CPU unless Receive Packet Steering
// says otherwise, so --rps-cpu R (root) sets /sys/class/net/lo/queues/rx-0/rps_cpus to R
// for the run and restores it on exit, Ctrl-C or SIGTERM: every packet then crosses to CPU R
// by IPI and is received there in NET_RX, in interrupt context or in ksoftirqd/R.
// --filter-insns N attaches a classic BPF socket filter of N byte loads, run for every
// packet inside that softirq: it sets how long NET_RX holds CPU R per packet.
// --burst-us B --every-us P sends only for the first B us of every P us, so CPU R sees one
// NET_RX run per burst (as long as the backlog the burst left takes to drain) instead of an
// overload; without them the flood never pauses. --batch N sends N datagrams per
// sendmmsg() call (default 64, 1 with bursts): a burst of batches outruns CPU R and leaves
// a backlog (up to net.core.netdev_max_backlog packets) that NET_RX drains over several
// runs, the rest of it in ksoftirqd/R. --burst-packets K ends a burst after K datagrams
// (or B us, whichever comes first): the backlog a burst leaves then does not depend on
// how fast the sending CPU happens to be. --fifo PRIO runs the sender SCHED_FIFO (root),
// so that other load on its CPU cannot thin the bursts out: each burst is then its whole
// B us of sending on a busy host as on a quiet one.
//
// Prints `sent N` and the receiving CPUs' softnet counters (processed, dropped at the
// backlog, squeezed out of a NET_RX run) at the end.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RPS "/sys/class/net/lo/queues/rx-0/rps_cpus"

static char saved_rps[256];
static volatile sig_atomic_t stop;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static void restore_rps(void) {
    if (saved_rps[0] && write_file(RPS, saved_rps))
        fprintf(stderr, "udpflood: could not restore %s to %s", RPS, saved_rps);
}

static void pin(long cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET((int)cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) perror("udpflood: sched_setaffinity");
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

// Per-CPU softnet_stat: processed, dropped, time_squeeze (hex columns 1-3).
static void print_softnet(const char *when) {
    FILE *f = fopen("/proc/net/softnet_stat", "r");
    if (!f) return;
    unsigned p, d, s;
    int cpu = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%x %x %x", &p, &d, &s) == 3)
            printf("%s cpu %d processed %u dropped %u squeezed %u\n", when, cpu, p, d, s);
        cpu++;
    }
    fclose(f);
}

int main(int argc, char **argv) {
    long cpu = 0, rps_cpu = -1, size = 16, insns = 0, burst_us = 0, every_us = 0, batch = 0,
         burst_packets = 0, fifo = 0;
    double seconds = 3;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "udpflood: %s needs a value\n", a); return 2; }
        if (!strcmp(a, "--cpu")) cpu = atol(v);
        else if (!strcmp(a, "--rps-cpu")) rps_cpu = atol(v);
        else if (!strcmp(a, "--seconds")) seconds = atof(v);
        else if (!strcmp(a, "--size")) size = atol(v);
        else if (!strcmp(a, "--filter-insns")) insns = atol(v);
        else if (!strcmp(a, "--burst-us")) burst_us = atol(v);
        else if (!strcmp(a, "--every-us")) every_us = atol(v);
        else if (!strcmp(a, "--batch")) batch = atol(v);
        else if (!strcmp(a, "--burst-packets")) burst_packets = atol(v);
        else if (!strcmp(a, "--fifo")) fifo = atol(v);
        else { fprintf(stderr, "udpflood: unknown option %s\n", a); return 2; }
    }
    if (size < 1 || size > 65000) { fprintf(stderr, "udpflood: bad --size\n"); return 2; }
    if (insns < 0 || insns > 4000) { fprintf(stderr, "udpflood: --filter-insns must be 0-4000\n"); return 2; }
    if ((burst_us > 0) != (every_us > 0) || burst_us > every_us) {
        fprintf(stderr, "udpflood: --burst-us B needs --every-us P with 0 < B <= P\n");
        return 2;
    }
    if (batch < 0 || batch > 64) { fprintf(stderr, "udpflood: --batch must be 1-64\n"); return 2; }
    if (batch == 0) batch = every_us > 0 ? 1 : 64;
    if (rps_cpu >= 0) {
        if (rps_cpu >= 64) { fprintf(stderr, "udpflood: --rps-cpu must be < 64\n"); return 2; }
        FILE *f = fopen(RPS, "r");
        if (!f || !fgets(saved_rps, sizeof saved_rps, f)) { perror("udpflood: " RPS); return 1; }
        fclose(f);
        struct sigaction sa = {.sa_handler = on_signal};
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        char mask[32];
        snprintf(mask, sizeof mask, "%llx\n", 1ULL << rps_cpu);
        if (write_file(RPS, mask)) { perror("udpflood: setting " RPS " (root?)"); return 1; }
        atexit(restore_rps);
    }
    prctl(PR_SET_NAME, "udpflood");
    pin(cpu);
    if (fifo > 0) {
        struct sched_param sp = {.sched_priority = (int)fifo};
        if (sched_setscheduler(0, SCHED_FIFO, &sp)) { perror("udpflood: SCHED_FIFO (root?)"); return 1; }
    }
    int rx = socket(AF_INET, SOCK_DGRAM, 0);
    if (rx < 0) { perror("udpflood: socket"); return 1; }
    if (insns > 0) {
        struct sock_filter *f = calloc((size_t)insns + 1, sizeof *f);
        for (long i = 0; i < insns; i++) f[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, (unsigned)((i * 61) % size));
        f[insns] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xffff);
        struct sock_fprog prog = {(unsigned short)(insns + 1), f};
        if (setsockopt(rx, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog)) {
            perror("udpflood: SO_ATTACH_FILTER (net.core.optmem_max too small for --filter-insns?)");
            return 1;
        }
    }
    struct sockaddr_in addr = {.sin_family = AF_INET};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(rx, (struct sockaddr *)&addr, sizeof addr) || getsockname(rx, (struct sockaddr *)&addr, &len)) {
        perror("udpflood: bind");
        return 1;
    }
    int tx = socket(AF_INET, SOCK_DGRAM, 0);
    if (tx < 0 || connect(tx, (struct sockaddr *)&addr, sizeof addr)) { perror("udpflood: connect"); return 1; }
    enum { BATCH = 64 };
    char *msg = calloc(1, (size_t)size);
    struct iovec iov[BATCH];
    struct mmsghdr mm[BATCH];
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < BATCH; i++) {
        iov[i] = (struct iovec){msg, (size_t)size};
        mm[i].msg_hdr.msg_iov = &iov[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    print_softnet("before");
    long sent = 0;
    double start = now_s(), end = start + seconds;
    long bursts = 0, in_burst = 0;
    for (double t = start; !stop && t < end; t = now_s()) {
        if (every_us > 0) {
            // Absolute burst starts, so a slow burst does not shift the ones after it.
            double b0 = start + bursts * every_us / 1e6;
            if (t >= b0 + burst_us / 1e6 || (burst_packets > 0 && in_burst >= burst_packets)) {
                in_burst = 0;
                bursts++;
                double next = start + bursts * every_us / 1e6;
                struct timespec ts = {(time_t)next, (long)((next - (time_t)next) * 1e9)};
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
                continue;
            }
        }
        long want = batch;
        if (burst_packets > 0 && burst_packets - in_burst < want) want = burst_packets - in_burst;
        int n = sendmmsg(tx, mm, (unsigned)want, 0);
        if (n > 0) {
            sent += n;
            in_burst += n;
        }
    }
    printf("sent %ld\n", sent);
    print_softnet("after");
    return 0;
}
