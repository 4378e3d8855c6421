// hog: a named CPU hog, the "ordinary task" the seeds' latencies queue behind.
//
//   hog [--name NAME] [--cpu C] [--seconds S] [--nice N [--own-session]]
//
// --nice N sets the hog's nice value. With sched_autogroup on, a task competes as its
// session's autogroup (nice 0 by default), so its own nice barely matters against tasks
// of other sessions: --own-session starts a session of its own and gives its autogroup
// nice N too, so the hog really weighs what nice N says (seed 002: a nice -19 hog that
// ksoftirqd, at nice 0, waits behind).
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *name = "hog";
    long cpu = -1;
    double seconds = 10;
    int nice = 0, has_nice = 0, own_session = 0;
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--own-session")) { own_session = 1; i--; continue; }
        if (i + 1 >= argc) { fprintf(stderr, "hog: %s needs a value\n", argv[i]); return 2; }
        if (!strcmp(argv[i], "--name")) name = argv[i + 1];
        else if (!strcmp(argv[i], "--nice")) { nice = atoi(argv[i + 1]); has_nice = 1; }
        else if (!strcmp(argv[i], "--cpu")) cpu = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else { fprintf(stderr, "hog: unknown option %s\n", argv[i]); return 2; }
    }
    prctl(PR_SET_NAME, name);
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set)) { perror("hog: sched_setaffinity"); return 1; }
    }
    if (own_session && setsid() < 0) {
        // A process-group leader (a shell job) cannot start a session: its child can.
        pid_t child = fork();
        if (child < 0) { perror("hog: fork"); return 1; }
        if (child > 0) {
            int st = 0;
            waitpid(child, &st, 0);
            return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        }
        if (setsid() < 0) { perror("hog: setsid"); return 1; }
    }
    if (has_nice) {
        if (setpriority(PRIO_PROCESS, 0, nice)) { perror("hog: setpriority"); return 1; }
        FILE *ag = own_session ? fopen("/proc/self/autogroup", "w") : NULL;
        // Without autogroups (or the file) the task's own nice is all there is.
        if (ag) {
            fprintf(ag, "%d", nice);
            fclose(ag);
        }
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile unsigned long spin = 0;
    do {
        for (int i = 0; i < 100000; i++) spin++;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    return 0;
}
