/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Slurm SPANK plugin: every MPI task of a job gets libdpushim.so
 * preloaded, the one built for the MPI it links, so that `srun ./app`
 * uses the cluster's agent services with no change to the command
 * (docs/admin.md, "Slurm"). Non-MPI tasks (srun hostname, a shell
 * script) are left exactly as they are.
 *
 * In plugstack.conf:
 *   optional /usr/lib/dpushim/slurm/spank_dpushim.so [default=on|off]
 *            [runner=/usr/bin/dpushim]
 * default: on for every job unless the user says --dpushim=off (default
 * on); runner: the dpushim runner whose MPI detection decides.
 * User option (srun, sbatch, salloc): --dpushim[=on|off].
 *
 * How: just before each task's execve, as the job's user, the plugin
 * asks the runner which library the program needs (dpushim --dry-run
 * PROGRAM: "LD_PRELOAD=..." when PROGRAM links Open MPI or MPICH, exit
 * status 2 when it links no MPI) and puts it in front of the task's own
 * LD_PRELOAD. A task whose program cannot be told (a script, a program
 * not found) runs unchanged: a job started through the runner itself
 * (srun dpushim ./app) is not touched either.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(dpushim, 1);

#define RUNNER_DEFAULT "/usr/bin/dpushim"
#define PRELOAD_MAX    8192

static int  enabled = 1; /* the site's default, then the user's word */
static char runner[PATH_MAX] = RUNNER_DEFAULT;

static int opt_dpushim(int val, const char *arg, int remote)
{
    (void)val;
    (void)remote;
    if (arg == NULL || strcmp(arg, "on") == 0 || strcmp(arg, "yes") == 0) {
        enabled = 1;
    } else if (strcmp(arg, "off") == 0 || strcmp(arg, "no") == 0) {
        enabled = 0;
    } else {
        slurm_error("dpushim: --dpushim=%s: expected on or off", arg);
        return -1;
    }
    return 0;
}

static struct spank_option dpushim_opt = {
    "dpushim",
    "on|off",
    "Preload libdpushim.so into the job's MPI tasks: their collectives go "
    "to the DPUs' agent services (default: the site's, in plugstack.conf)",
    2,
    0,
    opt_dpushim};

/* The plugin's arguments in plugstack.conf. */
static int plugin_args(int ac, char **av)
{
    int i;

    for (i = 0; i < ac; i++) {
        if (strcmp(av[i], "default=on") == 0) {
            enabled = 1;
        } else if (strcmp(av[i], "default=off") == 0) {
            enabled = 0;
        } else if (strncmp(av[i], "runner=", 7) == 0 && av[i][7] == '/' &&
                   strlen(av[i] + 7) < sizeof(runner)) {
            snprintf(runner, sizeof(runner), "%s", av[i] + 7);
        } else {
            slurm_error("dpushim: plugstack.conf: unknown argument '%s' "
                        "(default=on|off, runner=/ABSOLUTE/PATH)",
                        av[i]);
            return -1;
        }
    }
    return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    if (plugin_args(ac, av) != 0) {
        return -1;
    }
    if (spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_REMOTE ||
        spank_context() == S_CTX_ALLOCATOR) {
        return spank_option_register(sp, &dpushim_opt) == ESPANK_SUCCESS ? 0
                                                                         : -1;
    }
    return 0;
}

/* prog found on path (the task's PATH) when it has no '/': into out. */
static int find_program(const char *prog, const char *path, char *out,
                        size_t len)
{
    const char *p = path, *e;

    if (strchr(prog, '/') != NULL) {
        return snprintf(out, len, "%s", prog) < (int)len ? 0 : -1;
    }
    while (p != NULL && *p != '\0') {
        e = strchr(p, ':');
        if (snprintf(out, len, "%.*s/%s",
                     (int)(e != NULL ? (size_t)(e - p) : strlen(p)), p,
                     prog) < (int)len &&
            access(out, X_OK) == 0) {
            return 0;
        }
        p = e != NULL ? e + 1 : NULL;
    }
    return -1;
}

/* The runner's "LD_PRELOAD=..." for program into lib; 0, or -1 if it
 * names none (not an MPI program, or the runner failed). */
static int ask_runner(const char *program, char *lib, size_t len)
{
    char    out[PRELOAD_MAX + 256], *line, *save = NULL;
    size_t  got = 0;
    ssize_t n;
    pid_t   pid;
    int     fd[2], st, rc = -1;

    if (pipe2(fd, O_CLOEXEC) != 0) {
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        char *const argv[] = {runner, "--dry-run", (char *)program, NULL};
        char *const envp[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
        int         null = open("/dev/null", O_RDWR);

        dup2(fd[1], STDOUT_FILENO);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDERR_FILENO);
        }
        execve(runner, argv, envp);
        _exit(127);
    }
    close(fd[1]);
    while (got + 1 < sizeof(out) &&
           ((n = read(fd[0], out + got, sizeof(out) - 1 - got)) > 0 ||
            (n < 0 && errno == EINTR))) {
        got += n > 0 ? (size_t)n : 0;
    }
    out[got] = '\0';
    close(fd[0]);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        return -1;
    }
    for (line = strtok_r(out, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "LD_PRELOAD=", 11) == 0 && strlen(line + 11) < len) {
            /* The runner's first word is the library: the rest is any
             * LD_PRELOAD of its own environment, which has none. */
            snprintf(lib, len, "%s", line + 11);
            lib[strcspn(lib, ": ")] = '\0';
            rc = lib[0] == '/' ? 0 : -1;
        }
    }
    return rc;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    char   path[4096] = "/usr/bin:/bin", prog[PATH_MAX], lib[PRELOAD_MAX];
    char   old[PRELOAD_MAX], val[2 * PRELOAD_MAX + 2], *base;
    char **argv = NULL;
    int    argc = 0;

    (void)ac;
    (void)av;
    if (!enabled ||
        spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
        argc < 1) {
        return 0;
    }
    /* Already under the runner: it does the same itself. */
    base = strrchr(argv[0], '/');
    if (strcmp(base != NULL ? base + 1 : argv[0], "dpushim") == 0) {
        return 0;
    }
    spank_getenv(sp, "PATH", path, sizeof(path));
    if (find_program(argv[0], path, prog, sizeof(prog)) != 0 ||
        ask_runner(prog, lib, sizeof(lib)) != 0) {
        slurm_debug("dpushim: %s: not an MPI program the runner knows; "
                    "left unchanged",
                    argv[0]);
        return 0;
    }
    if (spank_getenv(sp, "LD_PRELOAD", old, sizeof(old)) == ESPANK_SUCCESS &&
        old[0] != '\0') {
        if (strstr(old, lib) != NULL) {
            return 0; /* preloaded already (by hand, or the module) */
        }
        snprintf(val, sizeof(val), "%s:%s", lib, old);
    } else {
        snprintf(val, sizeof(val), "%s", lib);
    }
    if (spank_setenv(sp, "LD_PRELOAD", val, 1) != ESPANK_SUCCESS) {
        slurm_error("dpushim: cannot set LD_PRELOAD for %s", argv[0]);
        return 0;
    }
    slurm_verbose("dpushim: %s: LD_PRELOAD=%s", argv[0], val);
    return 0;
}
