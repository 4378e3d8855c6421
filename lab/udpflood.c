// udpflood: a loopback UDP flood, load for the NET_RX softirq (seeds 002/003): every
// datagram sent on --cpu is received through NET_RX on that same CPU, on the way out of
// the sender's send() or, when softirqs pile up, in ksoftirqd.
//
// Not yet a demo scenario: beside a SCHED_FIFO periodic thread on the same CPU it caused
// no late period on this 6.18 VM (each send runs one short softirq), so it does not yet
// reproduce the seeds' deferral to ksoftirqd.
//
//   udpflood [--cpu C] [--rx-cpu R] [--seconds S] [--size BYTES] [--port P]
//
// The receiver (`udprecv`, pinned to --rx-cpu) drains the socket so the flood never stalls
// on a full receive buffer. Prints `sent N received M` at the end.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pin(long cpu) {
    if (cpu < 0) return;
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

int main(int argc, char **argv) {
    long cpu = 1, rx_cpu = 0, size = 1024, port = 0;
    double seconds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--cpu")) cpu = atol(v);
        else if (!strcmp(a, "--rx-cpu")) rx_cpu = atol(v);
        else if (!strcmp(a, "--seconds")) seconds = atof(v);
        else if (!strcmp(a, "--size")) size = atol(v);
        else if (!strcmp(a, "--port")) port = atol(v);
        else { fprintf(stderr, "udpflood: unknown option %s\n", a); return 2; }
    }
    if (argc % 2 == 0) { fprintf(stderr, "udpflood: %s needs a value\n", argv[argc - 1]); return 2; }
    if (size < 1 || size > 65000) { fprintf(stderr, "udpflood: bad --size\n"); return 2; }
    int rx = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (rx < 0 || bind(rx, (struct sockaddr *)&addr, sizeof addr)) { perror("udpflood: bind"); return 1; }
    socklen_t len = sizeof addr;
    getsockname(rx, (struct sockaddr *)&addr, &len);  // the port the kernel chose
    int pfd[2];
    if (pipe(pfd)) return 1;
    pid_t r = fork();
    if (r == 0) {
        prctl(PR_SET_NAME, "udprecv");
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pin(rx_cpu);
        close(pfd[0]);
        char *buf = malloc(65536);
        long got = 0;
        struct timeval tv = {0, 200000};
        setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        for (;;) {
            ssize_t n = recv(rx, buf, 65536, 0);
            if (n < 0) break;  // 200 ms without data: the sender is done
            got++;
        }
        if (write(pfd[1], &got, sizeof got) != sizeof got) _exit(1);
        _exit(0);
    }
    close(pfd[1]);
    prctl(PR_SET_NAME, "udpflood");
    pin(cpu);
    int tx = socket(AF_INET, SOCK_DGRAM, 0);
    if (tx < 0 || connect(tx, (struct sockaddr *)&addr, sizeof addr)) { perror("udpflood: connect"); return 1; }
    char *msg = calloc(1, (size_t)size);
    long sent = 0;
    double end = now_s() + seconds;
    while (now_s() < end) {
        for (int i = 0; i < 64; i++)
            if (send(tx, msg, (size_t)size, 0) == size) sent++;
    }
    long got = 0;
    if (read(pfd[0], &got, sizeof got) != sizeof got) got = -1;
    waitpid(r, NULL, 0);
    printf("sent %ld received %ld\n", sent, got);
    return 0;
}
