// frob: seed 000's mechanism on a pty. A device emulator (`frobdev`) holds the pty master
// and answers each 7-byte request with 1 byte after --reply-us; the client (`frobnicator`)
// writes the request to the slave and busy-polls a non-blocking read() for the reply. Past
// --timeout-us it appends a complaint to the --complaints file, then keeps polling so the
// late reply is still taken (and the next cycle starts clean); with --give-up-sleep-us S it
// gives up instead, as many real clients do: complains, sleeps S us, then polls on and
// takes the late reply after its sleep (issue 54's client). Past 1 s a cycle is given up;
// its reply, when it comes, is logged as that cycle's (the reply byte names its request)
// and the next cycle waits for its own. The reply reaches the reader
// through the tty flip-buffer work item (flush_to_ldisc) on a kworker, exactly like the
// USB-serial path.
//
//   frob [--cycles N] [--reply-us U] [--timeout-us T] [--period-us P]
//        [--client-cpu C] [--device-cpu D] [--hog-cpu H|-1] [--hogs N] [--log FILE]
//        [--complaints FILE] [--hog-policy other|idle] [--client-fifo PRIO]
//        [--give-up-sleep-us S] [--reader nonblock|raw0|vtime|poll|select|epoll|socket]
//
// --reader is how the client waits for its reply (the shapes real clients have):
// nonblock busy-polls a non-blocking read() (the default); raw0 is seed 000's client, a
// blocking tty in raw mode with VMIN=0/VTIME=0, whose read() returns 0 at once when no
// byte is there; vtime blocks in read() with VMIN=0/VTIME=1 (returns 0 after 100 ms);
// poll, select and epoll wait for the tty to be readable until the deadline (ppoll,
// pselect6 and epoll_wait; epoll's timeout rounds up to the ms), then read; socket talks
// to the device over a UNIX stream socket instead of the pty and blocks in read() with
// SO_RCVTIMEO set to the timeout (the reply is the device's write(), no tty work).
//
// The demo's mitigation moves the hogs to the client's CPU and runs the client SCHED_FIFO
// (--client-fifo): the device and the tty worker get their CPU back, and the hogs cannot
// hold the client. --hog-policy idle alone (SCHED_IDLE hogs beside the device) only halves
// the misses on 6.18 with lazy preemption: a woken worker can still wait up to a tick.
//
// Ground truth in --log, one line per cycle, CLOCK_MONOTONIC:
//   <cycle> <write_ns> <reply_ns> <latency_ns> <missed 0|1> <device_call_ns> <device_wrote_ns>
// reply_ns is when the client read the reply (0: never), even when a later cycle read it; device_call_ns and device_wrote_ns when the
// device called write() for it and when that returned (0 when it never wrote one): the
// reply became readable between the two, or just after (the tty work).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void pin(long cpu) {
    if (cpu < 0) return;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET((int)cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) perror("frob: sched_setaffinity");
}

static void sleep_us(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&t, &t) && errno == EINTR) {}
}

// Each byte read is the reply to the request it names: the cycle's own, or a reply that
// came after its cycle was given up (its time is still that cycle's reply time). Returns
// whether cycle i's own reply was among them.
static int took_replies(const char *buf, ssize_t n, long i, long long t, long long *r) {
    int mine = 0;
    for (ssize_t k = 0; k < n; k++) {
        long j = i - (long)(((unsigned char)(i & 0xff) - (unsigned char)buf[k]) & 0xff);
        if (j >= 0 && !r[j]) r[j] = t;
        mine |= j == i;
    }
    return mine;
}

static void raw(int fd) {
    struct termios t;
    if (tcgetattr(fd, &t) == 0) {
        cfmakeraw(&t);
        tcsetattr(fd, TCSANOW, &t);
    }
}

// A blocking tty whose read() returns after VTIME tenths of a second with no byte (0:
// at once), as VMIN=0 makes it.
static void timed_tty(int fd, int vtime) {
    struct termios t;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (tcgetattr(fd, &t) == 0) {
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = (cc_t)vtime;
        tcsetattr(fd, TCSANOW, &t);
    }
}

// Waits until fd is readable or `left_ns` passed, the way `reader` names (poll, select,
// epoll: ep is its epoll instance); the other readers wait in read() itself.
static void wait_readable(const char *reader, int fd, int ep, long long left_ns) {
    if (left_ns < 0) left_ns = 0;
    struct timespec ts = {left_ns / 1000000000LL, left_ns % 1000000000LL};
    if (!strcmp(reader, "poll")) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ppoll(&p, 1, &ts, NULL);
    } else if (!strcmp(reader, "select")) {
        fd_set r;
        FD_ZERO(&r);
        FD_SET(fd, &r);
        pselect(fd + 1, &r, NULL, NULL, &ts, NULL);
    } else if (!strcmp(reader, "epoll")) {
        struct epoll_event e;
        epoll_wait(ep, &e, 1, (int)((left_ns + 999999) / 1000000));
    }
}

int main(int argc, char **argv) {
    long cycles = 300, reply_us = 1000, timeout_us = 3500, period_us = 2000;
    long client_cpu = 0, device_cpu = 1, hog_cpu = -1, hogs = 1, client_fifo = 0, give_up_us = 0;
    const char *log = "frob.log", *complaints = "frobnicator.log", *hog_policy = "other";
    const char *reader = "nonblock";
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--cycles")) cycles = atol(v);
        else if (!strcmp(a, "--reply-us")) reply_us = atol(v);
        else if (!strcmp(a, "--timeout-us")) timeout_us = atol(v);
        else if (!strcmp(a, "--period-us")) period_us = atol(v);
        else if (!strcmp(a, "--client-cpu")) client_cpu = atol(v);
        else if (!strcmp(a, "--device-cpu")) device_cpu = atol(v);
        else if (!strcmp(a, "--hog-cpu")) hog_cpu = atol(v);
        else if (!strcmp(a, "--hogs")) hogs = atol(v);
        else if (!strcmp(a, "--log")) log = v;
        else if (!strcmp(a, "--complaints")) complaints = v;
        else if (!strcmp(a, "--hog-policy")) hog_policy = v;
        else if (!strcmp(a, "--client-fifo")) client_fifo = atol(v);
        else if (!strcmp(a, "--give-up-sleep-us")) give_up_us = atol(v);
        else if (!strcmp(a, "--reader")) reader = v;
        else { fprintf(stderr, "frob: unknown option %s\n", a); return 2; }
    }
    if (argc % 2 == 0) { fprintf(stderr, "frob: %s needs a value\n", argv[argc - 1]); return 2; }
    static const char *readers[] = {"nonblock", "raw0", "vtime", "poll", "select", "epoll", "socket"};
    int known = 0;
    for (size_t k = 0; k < sizeof readers / sizeof *readers; k++) known |= !strcmp(reader, readers[k]);
    if (!known) { fprintf(stderr, "frob: unknown --reader %s\n", reader); return 2; }
    int master, slave;
    if (!strcmp(reader, "socket")) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) { perror("frob: socketpair"); return 1; }
        master = sv[1], slave = sv[0];
        struct timeval tv = {timeout_us / 1000000, timeout_us % 1000000};
        if (setsockopt(slave, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv)) perror("frob: SO_RCVTIMEO");
    } else {
        master = posix_openpt(O_RDWR | O_NOCTTY);
        if (master < 0 || grantpt(master) || unlockpt(master)) { perror("frob: pty"); return 1; }
        slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_NONBLOCK);
        if (slave < 0) { perror("frob: slave"); return 1; }
        raw(master);
        raw(slave);
        if (!strcmp(reader, "raw0")) timed_tty(slave, 0);
        if (!strcmp(reader, "vtime")) timed_tty(slave, 1);
    }
    if (cycles < 1) cycles = 1;
    // The device's reply times, shared with the client, which logs them.
    long long *wrote = mmap(NULL, 2 * cycles * sizeof(long long), PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (wrote == MAP_FAILED) { perror("frob: mmap"); return 1; }

    pid_t dev = fork();
    if (dev == 0) {
        prctl(PR_SET_NAME, "frobdev");
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pin(device_cpu);
        close(slave);
        char req[7];
        for (long n = 0;; n++) {
            size_t got = 0;
            while (got < sizeof req) {
                ssize_t n = read(master, req + got, sizeof req - got);
                if (n <= 0) _exit(0);
                got += (size_t)n;
            }
            if (reply_us) sleep_us(reply_us);
            // The 1-byte reply names its request (its number mod 256), so a client that
            // gave a cycle up can tell that reply from the next one's.
            char tag = (char)(n & 0xff);
            long long call = now_ns();
            if (write(master, &tag, 1) != 1) _exit(0);
            if (n < cycles) wrote[2 * n] = call, wrote[2 * n + 1] = now_ns();
        }
    }
    pid_t hog[8];
    long nhog = hog_cpu >= 0 ? (hogs < 1 ? 1 : hogs > 8 ? 8 : hogs) : 0;
    for (long h = 0; h < nhog; h++) {
        hog[h] = fork();
        if (hog[h] == 0) {
            prctl(PR_SET_NAME, "hog");
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            pin(hog_cpu);
            if (!strcmp(hog_policy, "idle")) {
                struct sched_param sp = {0};
                if (sched_setscheduler(0, SCHED_IDLE, &sp)) perror("frob: SCHED_IDLE");
            }
            volatile unsigned long x = 0;
            for (;;) x++;
        }
    }

    prctl(PR_SET_NAME, "frobnicator");
    pin(client_cpu);
    if (client_fifo > 0) {
        // After the forks: the device and the hogs keep the policy they were started with.
        struct sched_param sp = {.sched_priority = (int)client_fifo};
        if (sched_setscheduler(0, SCHED_FIFO, &sp)) perror("frob: SCHED_FIFO client");
    }
    long long *w = calloc(cycles, sizeof *w), *r = calloc(cycles, sizeof *r);
    char *missed = calloc(cycles, 1);
    if (!w || !r || !missed) return 1;
    memset(w, 1, cycles * sizeof *w);
    memset(r, 1, cycles * sizeof *r);
    mlockall(MCL_CURRENT | MCL_FUTURE);
    FILE *cf = fopen(complaints, "a");
    if (!cf) { perror(complaints); return 1; }
    setvbuf(cf, NULL, _IONBF, 0);
    sleep_us(20000);  // let the device and the hog settle on their CPUs
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = slave};
    if (!strcmp(reader, "epoll") && epoll_ctl(ep, EPOLL_CTL_ADD, slave, &ev)) perror("frob: epoll_ctl");
    static const char request[7] = "frob?\r\n";
    char buf[64];
    for (long i = 0; i < cycles; i++) {
        w[i] = now_ns();
        if (write(slave, request, sizeof request) != (ssize_t)sizeof request) { perror("frob: write"); break; }
        long long deadline = w[i] + timeout_us * 1000LL, give_up = w[i] + 1000000000LL;
        r[i] = 0;
        for (;;) {
            wait_readable(reader, slave, ep, (missed[i] ? give_up : deadline) - now_ns());
            ssize_t n = read(slave, buf, sizeof buf);
            long long t = now_ns();
            if (n > 0 && took_replies(buf, n, i, t, r)) break;
            if (!missed[i] && t > deadline) {
                missed[i] = 1;
                fprintf(cf, "frobnicator: no reply to request %ld within %ld us\n", i, timeout_us);
                if (give_up_us) sleep_us(give_up_us);
            }
            if (t > give_up) { r[i] = 0; break; }
        }
        sleep_us(period_us);
    }
    kill(dev, SIGKILL);
    for (long h = 0; h < nhog; h++) kill(hog[h], SIGKILL);
    waitpid(dev, NULL, 0);
    for (long h = 0; h < nhog; h++) waitpid(hog[h], NULL, 0);
    FILE *out = fopen(log, "w");
    if (!out) { perror(log); return 1; }
    long misses = 0;
    for (long i = 0; i < cycles; i++) {
        long long lat = r[i] ? r[i] - w[i] : -1;
        fprintf(out, "%ld %lld %lld %lld %d %lld %lld\n", i, w[i], r[i], lat, missed[i],
                wrote[2 * i], wrote[2 * i + 1]);
        misses += missed[i];
    }
    fclose(out);
    printf("cycles=%ld misses=%ld\n", cycles, misses);
    return 0;
}
