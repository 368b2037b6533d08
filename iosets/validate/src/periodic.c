/* periodic: a periodic I/O benchmark (IOR-like) whose own timestamps are the ground truth of `iosets validate`.
 *
 * A job alternates compute phases (a sleep: the phase model never slows compute) and I/O phases.
 * Each I/O phase writes its bytes, split over P processes (rank 0 and P - 1 forked workers), each
 * rewriting its own file DIR/JOB.RANK.dat from offset 0 in R-byte requests, so that the disk holds
 * at most one phase's bytes per process. The bytes reach storage: O_DIRECT where the file system
 * allows it (aligned buffers, each process's share rounded up to 4 KiB), else buffered writes and
 * an fsync at the end of each phase.
 *
 * With --arbiter, rank 0 holds the job's connection: it asks the arbiter before each I/O phase,
 * publishes the job's rate in shared memory, releases the workers through their pipes, and each
 * process paces its requests to rate / P (iosets_pacer). The phase ends when every process has
 * written its share.
 *
 * Rank 0 appends one CSV row per phase (CLOCK_REALTIME, ns): job_id, phase, cpu_start, cpu_end
 * (the I/O request), io_start (the grant; cpu_end without an arbiter), io_end (all processes'
 * data durable), bytes (written by all processes).
 */
#define _GNU_SOURCE /* O_DIRECT, getopt_long */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "iosets_arbiter.h"

#define ALIGN 4096                /* O_DIRECT alignment of buffers, offsets and sizes */
#define MAX_PROCESSES 1024
#define EXIT_USAGE 2

typedef struct {
    double t_cpu; /* s */
    double bytes; /* of the whole job */
} phase;

typedef struct {
    const char *job_id, *dir, *output, *phase_file, *arbiter;
    long count;
    double t_cpu, bytes;
    long long request;
    int processes, set, keep_files, buffered;
    double priority, timeout;
    int64_t start_at, stop_at; /* CLOCK_REALTIME ns; stop_at < 0: none */
} options;

/* What every process of the job shares. */
typedef struct {
    const options *opt;
    int direct;            /* O_DIRECT accepted */
    char *buffer;          /* one request, aligned */
    _Atomic uint64_t *job_rate; /* bits of the job's rate (bytes/s, double); 0: unpaced (shared memory) */
    iosets_arbiter *arbiter;    /* rank 0 only */
} job;

static const char *job_name = "?";

static void fail(int code, const char *format, ...)
{
    char text[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    fprintf(stderr, "periodic: job %s: %s\n", job_name, text);
    exit(code);
}

static int64_t realtime_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void sleep_until_ns(int64_t date)
{
    struct timespec t = {(time_t)(date / 1000000000LL), (long)(date % 1000000000LL)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &t, NULL) == EINTR) {
    }
}

/* ------------------------------------------------------------------ arguments */

static const char USAGE[] =
    "usage: periodic --job-id ID --dir DIR --output CSV (--phases FILE | --count N --t-cpu S --bytes B)\n"
    "                [--request-size R] [--processes P] [--start-at NS] [--stop-at NS] [--keep-files] [--buffered]\n"
    "                [--arbiter unix:PATH|tcp:HOST:PORT --set S --priority P [--timeout S]]\n"
    "\n"
    "  --phases FILE      one phase per line: T_CPU (s) and BYTES (of the whole job); '#' starts a comment\n"
    "  --count N --t-cpu S --bytes B   N identical phases instead\n"
    "  --request-size R   bytes per write request, a multiple of 4096 (default 1048576)\n"
    "  --processes P      processes of the job, each writing its share to DIR/ID.RANK.dat (default 1)\n"
    "  --start-at NS      CLOCK_REALTIME date (ns) of the job's release (default: now)\n"
    "  --stop-at NS       no phase starts at or after this date (ns)\n"
    "  --keep-files       leave the data files in DIR (default: removed at the end)\n"
    "  --buffered         buffered writes and an fsync per phase even where O_DIRECT works\n"
    "  --arbiter ADDRESS  ask the IO-SETS arbiter before each I/O phase and pace to its rate\n"
    "  --set S --priority P --timeout S   the job's set, priority and the client's timeout (s)\n";

static void usage_error(const char *format, ...)
{
    char text[512];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    fprintf(stderr, "periodic: %s\n%s", text, USAGE);
    exit(EXIT_USAGE);
}

static double number_of(const char *text, const char *option, double minimum)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !isfinite(value) || value < minimum)
        usage_error("%s: expected a finite number >= %g, got '%s'", option, minimum, text);
    return value;
}

static long long integer_of(const char *text, const char *option, long long minimum, long long maximum)
{
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || value < minimum || value > maximum)
        usage_error("%s: expected an integer in [%lld, %lld], got '%s'", option, minimum, maximum, text);
    return value;
}

static int valid_job_id(const char *id)
{
    size_t n = strlen(id);
    return n >= 1 && n <= 64 &&
           strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

static options parse_options(int argc, char **argv)
{
    enum { JOB_ID = 1, DIR_, OUTPUT, PHASES, COUNT, T_CPU, BYTES, REQUEST, PROCESSES, START_AT, STOP_AT,
           KEEP, BUFFERED, ARBITER, SET, PRIORITY, TIMEOUT, HELP };
    static const struct option long_options[] = {
        {"job-id", required_argument, 0, JOB_ID},       {"dir", required_argument, 0, DIR_},
        {"output", required_argument, 0, OUTPUT},       {"phases", required_argument, 0, PHASES},
        {"count", required_argument, 0, COUNT},         {"t-cpu", required_argument, 0, T_CPU},
        {"bytes", required_argument, 0, BYTES},         {"request-size", required_argument, 0, REQUEST},
        {"processes", required_argument, 0, PROCESSES}, {"start-at", required_argument, 0, START_AT},
        {"stop-at", required_argument, 0, STOP_AT},     {"keep-files", no_argument, 0, KEEP},
        {"buffered", no_argument, 0, BUFFERED},         {"arbiter", required_argument, 0, ARBITER},
        {"set", required_argument, 0, SET},
        {"priority", required_argument, 0, PRIORITY},   {"timeout", required_argument, 0, TIMEOUT},
        {"help", no_argument, 0, HELP},                 {0, 0, 0, 0},
    };
    options o = {.count = -1, .t_cpu = NAN, .bytes = NAN, .request = 1 << 20, .processes = 1, .set = -1,
                 .priority = NAN, .timeout = 0.0, .start_at = 0, .stop_at = -1};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
        switch (c) {
        case JOB_ID: o.job_id = optarg; break;
        case DIR_: o.dir = optarg; break;
        case OUTPUT: o.output = optarg; break;
        case PHASES: o.phase_file = optarg; break;
        case COUNT: o.count = (long)integer_of(optarg, "--count", 0, 100000000); break;
        case T_CPU: o.t_cpu = number_of(optarg, "--t-cpu", 0); break;
        case BYTES: o.bytes = number_of(optarg, "--bytes", 0); break;
        case REQUEST: o.request = integer_of(optarg, "--request-size", ALIGN, 1LL << 30); break;
        case PROCESSES: o.processes = (int)integer_of(optarg, "--processes", 1, MAX_PROCESSES); break;
        case START_AT: o.start_at = integer_of(optarg, "--start-at", 0, INT64_MAX); break;
        case STOP_AT: o.stop_at = integer_of(optarg, "--stop-at", 0, INT64_MAX); break;
        case KEEP: o.keep_files = 1; break;
        case BUFFERED: o.buffered = 1; break;
        case ARBITER: o.arbiter = optarg; break;
        case SET: o.set = (int)integer_of(optarg, "--set", 0, 1 << 30); break;
        case PRIORITY: o.priority = number_of(optarg, "--priority", 0); break;
        case TIMEOUT: o.timeout = number_of(optarg, "--timeout", 0); break;
        case HELP: fputs(USAGE, stdout); exit(0);
        default: usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        usage_error("unexpected argument '%s'", argv[optind]);
    if (o.job_id == NULL || !valid_job_id(o.job_id))
        usage_error("--job-id: expected 1 to 64 characters among A-Z a-z 0-9 _ . -, got '%s'",
                    o.job_id ? o.job_id : "");
    if (o.dir == NULL || o.output == NULL)
        usage_error("--dir and --output are required");
    if ((o.phase_file != NULL) == (o.count >= 0))
        usage_error("give either --phases FILE or --count N --t-cpu S --bytes B");
    if (o.count >= 0 && (isnan(o.t_cpu) || isnan(o.bytes)))
        usage_error("--count needs --t-cpu and --bytes");
    if (o.request % ALIGN != 0)
        usage_error("--request-size: expected a multiple of %d, got %lld", ALIGN, o.request);
    if (o.arbiter != NULL && (o.set < 0 || !(o.priority > 0)))
        usage_error("--arbiter needs --set S (>= 0) and --priority P (> 0)");
    return o;
}

/* The phases of --phases FILE or of --count; *n_out set. */
static phase *read_phases(const options *o, long *n_out)
{
    if (o->phase_file == NULL) {
        phase *list = malloc(sizeof(phase) * (size_t)(o->count > 0 ? o->count : 1));
        if (list == NULL)
            fail(1, "out of memory for %ld phases", o->count);
        for (long k = 0; k < o->count; k++)
            list[k] = (phase){o->t_cpu, o->bytes};
        *n_out = o->count;
        return list;
    }
    FILE *f = fopen(o->phase_file, "r");
    if (f == NULL)
        usage_error("--phases: cannot read %s (%s)", o->phase_file, strerror(errno));
    size_t n = 0, capacity = 64;
    phase *list = malloc(sizeof(phase) * capacity);
    char line[512];
    for (long number = 1; list != NULL && fgets(line, sizeof line, f) != NULL; number++) {
        char *hash = strchr(line, '#');
        if (hash != NULL)
            *hash = '\0';
        double t_cpu, bytes;
        char extra;
        int fields = sscanf(line, "%lf %lf %c", &t_cpu, &bytes, &extra);
        if (fields == EOF)
            continue;
        if (fields != 2 || !isfinite(t_cpu) || !isfinite(bytes) || t_cpu < 0 || bytes < 0)
            usage_error("--phases: %s line %ld: expected T_CPU BYTES, two finite numbers >= 0", o->phase_file,
                        number);
        if (n == capacity) {
            capacity *= 2;
            phase *grown = realloc(list, sizeof(phase) * capacity);
            if (grown == NULL)
                free(list);
            list = grown;
        }
        if (list != NULL)
            list[n++] = (phase){t_cpu, bytes};
    }
    fclose(f);
    if (list == NULL)
        fail(1, "out of memory reading %s", o->phase_file);
    *n_out = (long)n;
    return list;
}

/* ------------------------------------------------------------------ the I/O of one process */

/* Each process's share of a phase: ceil(bytes / P), rounded up to ALIGN. */
static int64_t share_of(double bytes, int processes)
{
    double each = ceil(bytes / processes);
    return (int64_t)(ceil(each / ALIGN) * ALIGN);
}

static void data_path(char *path, size_t size, const options *o, int rank)
{
    if ((size_t)snprintf(path, size, "%s/%s.%d.dat", o->dir, o->job_id, rank) >= size)
        fail(1, "the path of the data files in %s is too long", o->dir);
}

static int open_data(const options *o, int rank, int direct)
{
    char path[4096];
    data_path(path, sizeof path, o, rank);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
    if (fd < 0 && !(direct && errno == EINVAL))
        fail(1, "cannot open %s (%s)", path, strerror(errno));
    return fd;
}

/* The program's own bookkeeping (the O_DIRECT probe, the truth CSV) goes through raw system calls: tracing
 * libraries such as darshan-runtime wrap the libc functions, so what they record is the workload alone. */
static ssize_t untraced_pwrite(int fd, const void *buffer, size_t n, off_t offset)
{
    return (ssize_t)syscall(SYS_pwrite64, fd, buffer, n, offset);
}

static int untraced_open(const char *path)
{
    return (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

/* Append one formatted line to the truth CSV at `fd` (untraced); 0 or an errno. */
static int csv_line(int fd, const char *format, ...)
{
    char line[512];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(line, sizeof line, format, args);
    va_end(args);
    if (n < 0 || (size_t)n >= sizeof line)
        return EOVERFLOW;
    for (int done = 0; done < n;) {
        ssize_t got = (ssize_t)syscall(SYS_write, fd, line + done, (size_t)(n - done));
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        done += (int)got;
    }
    return 0;
}

/* Whether DIR's file system takes O_DIRECT writes: open rank 0's file with it and write one block. */
static int probe_direct(const options *o, char *buffer)
{
    int fd = open_data(o, 0, 1);
    if (fd < 0)
        return 0;
    ssize_t n = untraced_pwrite(fd, buffer, ALIGN, 0);
    int refused = n < 0 && errno == EINVAL;
    if (n < 0 && !refused)
        fail(1, "cannot write in %s (%s)", o->dir, strerror(errno));
    close(fd);
    return !refused;
}

static double rate_from(_Atomic uint64_t *shared)
{
    uint64_t bits = atomic_load_explicit(shared, memory_order_relaxed);
    double rate;
    memcpy(&rate, &bits, sizeof rate);
    return rate;
}

static void publish_rate(_Atomic uint64_t *shared, double rate)
{
    uint64_t bits;
    memcpy(&bits, &rate, sizeof bits);
    atomic_store_explicit(shared, bits, memory_order_relaxed);
}

/* A process's rate: its share of the job's; rank 0 first reads the arbiter's RATE lines. */
typedef struct {
    job *j;
    int rank;
} pace_context;

static double process_rate(void *ctx)
{
    pace_context *c = ctx;
    if (c->rank == 0 && c->j->arbiter != NULL)
        publish_rate(c->j->job_rate, iosets_arbiter_rate(c->j->arbiter));
    return rate_from(c->j->job_rate) / c->j->opt->processes;
}

/* Write `share` bytes from offset 0 of the process's file, paced to its rate. 0, or an errno. */
static int write_share(job *j, int fd, int rank, int64_t share)
{
    pace_context ctx = {j, rank};
    iosets_pacer pacer;
    iosets_pacer_start(&pacer);
    for (int64_t offset = 0; offset < share;) {
        size_t n = (size_t)(share - offset < j->opt->request ? share - offset : j->opt->request);
        ssize_t written = pwrite(fd, j->buffer, n, offset);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return written < 0 ? errno : EIO;
        offset += written;
        iosets_pacer_wait(&pacer, (size_t)written, process_rate, &ctx);
    }
    if (!j->direct && fsync(fd) != 0)
        return errno;
    return 0;
}

/* A worker: write its share of each phase rank 0 orders, answer one byte (0: done, else an errno). */
static void worker(job *j, int rank, int orders, int done)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive rank 0 */
    int fd = open_data(j->opt, rank, j->direct);
    int64_t share;
    while (read(orders, &share, sizeof share) == (ssize_t)sizeof share && share >= 0) {
        int rc = write_share(j, fd, rank, share);
        unsigned char answer = (unsigned char)(rc == 0 ? 0 : (rc < 255 ? rc : 255));
        if (write(done, &answer, 1) != 1)
            break;
    }
    close(fd);
    _exit(0);
}

/* ------------------------------------------------------------------ the job */

typedef struct {
    pid_t pid;
    int orders; /* write end */
} worker_handle;

static void start_workers(job *j, worker_handle *workers, int done[2])
{
    for (int rank = 1; rank < j->opt->processes; rank++) {
        int orders[2];
        if (pipe(orders) != 0)
            fail(1, "cannot create a pipe (%s)", strerror(errno));
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
            fail(1, "cannot fork process %d (%s)", rank, strerror(errno));
        if (pid == 0) {
            close(orders[1]);
            close(done[0]);
            for (int r = 1; r < rank; r++)
                close(workers[r].orders);
            worker(j, rank, orders[0], done[1]);
        }
        close(orders[0]);
        workers[rank] = (worker_handle){pid, orders[1]};
    }
}

/* A worker that ended before rank 0 asked it to: an error that names it. */
static void check_workers(const worker_handle *workers, int n_workers)
{
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    for (int rank = 1; pid > 0 && rank <= n_workers; rank++)
        if (workers[rank].pid == pid)
            fail(1, "process %d ended during a phase (%s %d)", rank,
                 WIFSIGNALED(status) ? "signal" : "exit status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* Wait for the workers' answers to a phase; rank 0 keeps reading the arbiter's rate meanwhile. */
static void wait_workers(job *j, int done, const worker_handle *workers, int n_workers)
{
    for (int left = n_workers; left > 0;) {
        double rate = j->arbiter != NULL ? iosets_arbiter_rate(j->arbiter) : 0.0;
        if (rate > 0)
            publish_rate(j->job_rate, rate);
        struct pollfd p = {done, POLLIN, 0};
        if (poll(&p, 1, rate > 0 ? 1 : 100) <= 0) {
            check_workers(workers, n_workers);
            continue;
        }
        unsigned char answer;
        ssize_t n = read(done, &answer, 1);
        if (n == 1 && answer == 0)
            left--;
        else if (n == 1)
            fail(1, "a process cannot write in %s (%s)", j->opt->dir, strerror(answer));
        else if (n == 0)
            fail(1, "every process ended during a phase");
    }
}

static void remove_files(const options *o)
{
    for (int rank = 0; rank < o->processes; rank++) {
        char path[4096];
        data_path(path, sizeof path, o, rank);
        unlink(path);
    }
}

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
    job_name = o.job_id;
    long n_phases;
    phase *phases = read_phases(&o, &n_phases);
    struct stat st;
    if (stat(o.dir, &st) != 0 || !S_ISDIR(st.st_mode))
        usage_error("--dir: %s is not a folder", o.dir);
    int csv = untraced_open(o.output);
    if (csv < 0)
        usage_error("--output: cannot write %s (%s)", o.output, strerror(errno));
    if (csv_line(csv, "job_id,phase,cpu_start,cpu_end,io_start,io_end,bytes\n") != 0)
        usage_error("--output: cannot write %s (%s)", o.output, strerror(errno));

    job j = {.opt = &o};
    if (posix_memalign((void **)&j.buffer, ALIGN, (size_t)o.request) != 0)
        fail(1, "out of memory for a request of %lld bytes", o.request);
    memset(j.buffer, 0x5a, (size_t)o.request);
    j.direct = !o.buffered && probe_direct(&o, j.buffer);
    if (!j.direct && !o.buffered)
        fprintf(stderr, "periodic: job %s: %s refuses O_DIRECT: buffered writes and fsync\n", o.job_id, o.dir);
    j.job_rate = mmap(NULL, sizeof *j.job_rate, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (j.job_rate == MAP_FAILED)
        fail(1, "cannot map shared memory (%s)", strerror(errno));
    publish_rate(j.job_rate, 0.0);

    int done[2];
    if (pipe(done) != 0)
        fail(1, "cannot create a pipe (%s)", strerror(errno));
    worker_handle workers[MAX_PROCESSES];
    start_workers(&j, workers, done); /* before the arbiter's socket, which they must not hold */
    close(done[1]);
    int fd = open_data(&o, 0, j.direct);
    if (o.arbiter != NULL) {
        j.arbiter = iosets_arbiter_open(o.arbiter, o.job_id, o.set, o.priority, o.timeout);
        if (j.arbiter == NULL)
            fail(EXIT_USAGE, "cannot use the arbiter address %s", o.arbiter);
    }

    int64_t cpu_start = o.start_at;
    if (cpu_start > realtime_ns())
        sleep_until_ns(cpu_start);
    else
        cpu_start = realtime_ns();
    for (long k = 0; k < n_phases; k++) {
        if (o.stop_at >= 0 && cpu_start >= o.stop_at)
            break;
        sleep_until_ns(cpu_start + (int64_t)llround(phases[k].t_cpu * 1e9));
        int64_t cpu_end = realtime_ns(), io_start = cpu_end;
        double rate = 0.0;
        if (j.arbiter != NULL) {
            rate = iosets_arbiter_begin(j.arbiter, phases[k].bytes);
            io_start = realtime_ns();
        }
        publish_rate(j.job_rate, rate);
        int64_t share = share_of(phases[k].bytes, o.processes);
        for (int rank = 1; rank < o.processes; rank++)
            if (write(workers[rank].orders, &share, sizeof share) != (ssize_t)sizeof share)
                fail(1, "worker %d is gone", rank);
        int rc = write_share(&j, fd, 0, share);
        if (rc != 0)
            fail(1, "cannot write in %s (%s)", o.dir, strerror(rc));
        wait_workers(&j, done[0], workers, o.processes - 1);
        int64_t io_end = realtime_ns();
        if (j.arbiter != NULL)
            iosets_arbiter_end(j.arbiter);
        rc = csv_line(csv, "%s,%ld,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n", o.job_id, k,
                      cpu_start, cpu_end, io_start, io_end, share * o.processes);
        if (rc != 0)
            fail(1, "cannot write %s (%s)", o.output, strerror(rc));
        cpu_start = io_end; /* the next compute starts when the I/O ends */
    }

    int64_t quit = -1;
    for (int rank = 1; rank < o.processes; rank++) {
        if (write(workers[rank].orders, &quit, sizeof quit) < 0) {
            /* a worker already gone is reaped below */
        }
        close(workers[rank].orders);
    }
    for (int rank = 1; rank < o.processes; rank++)
        waitpid(workers[rank].pid, NULL, 0);
    iosets_arbiter_close(j.arbiter);
    close(fd);
    if (!o.keep_files)
        remove_files(&o);
    if (syscall(SYS_close, csv) != 0)
        fail(1, "cannot write %s (%s)", o.output, strerror(errno));
    free(phases);
    free(j.buffer);
    return 0;
}
