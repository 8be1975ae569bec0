/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpu_agent --listen and --service: a long-running supervisor on a TCP
 * port. Each client sends a hello with its job name and proof
 * (common/dps_listen.h): the secret of a file only its user could write
 * (--listen, run by that user), or a MUNGE credential answering this
 * connection's challenge (--service, run by root for every user). The
 * supervisor checks it and forks a child that is an ordinary single-job
 * agent on the accepted socket; a service's child first becomes the
 * job's user. One process per job, so a job (or a crash serving it)
 * cannot touch another. The supervisor itself never creates UCX objects,
 * never reads a rank's memory, never blocks on a client (only on munged,
 * for a decode) and never trusts one.
 */
#define _GNU_SOURCE
#include "dpu_agent/job/agent_listen.h"
#include "common/dps_listen.h"
#include "common/dps_log.h"
#include "common/dps_munge.h"
#include "common/dps_status.h"
#include "common/dps_ucx.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Clients that have connected but not yet been judged, at most. A flood
 * of idle connections then costs a bounded amount, and never a fork. */
#define LISTEN_MAX_PENDING 64
/* Time a client has for its whole hello. */
#define LISTEN_HELLO_SEC   5.0
/* Longest poll: reap children even if a SIGCHLD wake-up were lost. */
#define LISTEN_BACKSTOP_MS 1000
/* Out of descriptors: stop accepting this long rather than spin. */
#define LISTEN_PAUSE_SEC   0.1
#define PEER_MAX           (NI_MAXHOST + NI_MAXSERV + 4)

typedef struct lconn {
    int    fd;       /* -1: closed, slot to be compacted */
    double deadline; /* for the complete hello */
    size_t len;
    /* One byte more than the longest hello, to see trailing bytes. */
    uint8_t buf[DPS_SERVICE_HELLO_MAX + 1];
    char    peer[PEER_MAX];
    char    nonce[DPS_NONCE_HEX + 1]; /* a service's challenge */
} lconn_t;

/* Whom a service's worker serves: the credential's. */
typedef struct owner {
    uid_t uid;
    gid_t gid;
    char  name[64];
} owner_t;

typedef struct ljob {
    pid_t pid;
    char  name[DPS_LISTEN_NAME_MAX + 1];
    char  user[64]; /* a service's: the job's user */
} ljob_t;

typedef struct listener {
    int                    lfd;
    int                    sig[2]; /* self-pipe written by signal handlers */
    const char            *dir;
    const agent_service_t *svc; /* NULL: --listen */
    agent_serve_fn         serve;
    void                  *arg;
    lconn_t                conns[LISTEN_MAX_PENDING];
    int                    nconns;
    ljob_t                *jobs; /* running children */
    size_t                 njobs, jobs_cap;
    double                 accept_after; /* accepting paused until then */
} listener_t;

static volatile sig_atomic_t stop_signal;
static int                   sig_wfd = -1;

static void on_signal(int sig)
{
    int saved = errno;

    if (sig != SIGCHLD) {
        stop_signal = sig;
    }
    if (write(sig_wfd, "", 1) < 0) {
        /* pipe full: a wake-up is pending anyway */
    }
    errno = saved;
}

static void set_signals(void (*handler)(int))
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* "1.2.3.4:5" or "[::1]:5" for a socket address. */
static void addr_str(const struct sockaddr *sa, socklen_t sl, char *out,
                     size_t len)
{
    char h[NI_MAXHOST], s[NI_MAXSERV];

    if (getnameinfo(sa, sl, h, sizeof(h), s, sizeof(s),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(out, len, "(unknown peer)");
    } else if (sa->sa_family == AF_INET6) {
        snprintf(out, len, "[%s]:%s", h, s);
    } else {
        snprintf(out, len, "%s:%s", h, s);
    }
}

static int open_socket(const char *hostport)
{
    char host[DPS_LISTEN_HOSTPORT_MAX], port[8], err[256], where[PEER_MAX];
    struct addrinfo         hints, *res = NULL, *ai;
    struct sockaddr_storage ss;
    socklen_t               sl = sizeof(ss);
    int                     fd = -1, one = 1, r, e = 0;

    if (dps_listen_split_hostport(hostport, 1, host, sizeof(host), port,
                                  sizeof(port), err, sizeof(err)) != DPS_OK) {
        dps_error("--listen: %s", err);
        return -1;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    r = getaddrinfo(host, port, &hints, &res);
    if (r != 0) {
        dps_error("cannot listen on %s: %s", hostport,
                  r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
        return -1;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family,
                    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        /* A restarted listener must not wait for old connections. */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
            listen(fd, 128) == 0) {
            break;
        }
        e = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        dps_error("cannot listen on %s: %s", hostport, strerror(e));
        return -1;
    }
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        dps_error("getsockname: %m");
        close(fd);
        return -1;
    }
    addr_str((struct sockaddr *)&ss, sl, where, sizeof(where));
    /* Scripts read the port chosen for ":0" from this line. */
    printf("dpu_agent: listening on %s\n", where);
    fflush(stdout);
    return fd;
}

/* Send one line without ever blocking; the peer may be gone. */
static void send_line(int fd, const char *what, const char *text)
{
    char line[512];
    int  n = snprintf(line, sizeof(line), "%s %s\n", what, text);

    if (n >= (int)sizeof(line)) {
        n = (int)sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    if (send(fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
        /* best effort */
    }
}

static void conn_close(lconn_t *c)
{
    close(c->fd);
    c->fd = -1;
}

/* Log why, tell the client (best effort), close. job may be NULL. */
static void refuse(lconn_t *c, const char *job, const char *why)
{
    if (job != NULL) {
        dps_warn("refused %s job '%s': %s", c->peer, job, why);
    } else {
        dps_warn("refused %s: %s", c->peer, why);
    }
    send_line(c->fd, "refused", why);
    conn_close(c);
}

static void job_add(listener_t *l, pid_t pid, const char *name,
                    const char *user)
{
    if (l->njobs == l->jobs_cap) {
        size_t  cap = l->jobs_cap ? 2 * l->jobs_cap : 16;
        ljob_t *j = realloc(l->jobs, cap * sizeof(*j));

        if (j == NULL) {
            return; /* reaped all the same, logged without its name */
        }
        l->jobs = j;
        l->jobs_cap = cap;
    }
    l->jobs[l->njobs].pid = pid;
    snprintf(l->jobs[l->njobs].name, sizeof(l->jobs[0].name), "%s", name);
    snprintf(l->jobs[l->njobs].user, sizeof(l->jobs[0].user), "%s", user);
    l->njobs++;
}

static void reap(listener_t *l)
{
    const char *name, *user;
    char        how[96];
    size_t      i;
    pid_t       pid;
    int         st;

    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        for (i = 0; i < l->njobs && l->jobs[i].pid != pid; i++) {
        }
        name = i < l->njobs ? l->jobs[i].name : "?";
        user = i < l->njobs ? l->jobs[i].user : "";
        if (WIFEXITED(st)) {
            snprintf(how, sizeof(how), "exit status %d", WEXITSTATUS(st));
        } else if (WIFSIGNALED(st)) {
            snprintf(how, sizeof(how), "killed by signal %d (%s)",
                     WTERMSIG(st), strsignal(WTERMSIG(st)));
        } else {
            snprintf(how, sizeof(how), "wait status 0x%x", st);
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            dps_info("job '%s'%s%s (pid %d) ended: %s", name,
                     user[0] ? " of " : "", user, (int)pid, how);
        } else {
            dps_warn("job '%s'%s%s (pid %d) ended: %s", name,
                     user[0] ? " of " : "", user, (int)pid, how);
        }
        if (i < l->njobs) {
            l->jobs[i] = l->jobs[--l->njobs];
        }
    }
}

/* In the forked child: drop everything of the listener but the job's
 * socket, which becomes an ordinary blocking descriptor. */
static void child_enter(listener_t *l, int fd)
{
    sigset_t none;
    int      i, null;

    set_signals(SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    close(l->lfd);
    close(l->sig[0]);
    close(l->sig[1]);
    sig_wfd = -1;
    for (i = 0; i < l->nconns; i++) {
        if (l->conns[i].fd >= 0 && l->conns[i].fd != fd) {
            close(l->conns[i].fd);
        }
    }
    free(l->jobs);
    l->jobs = NULL;
    l->njobs = l->jobs_cap = 0;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    /* Like a spawned agent: nothing to read but the job's socket. */
    null = (fd == STDIN_FILENO) ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0 && null != STDIN_FILENO) {
        dup2(null, STDIN_FILENO);
        close(null);
    }
    dps_log_set_who("agent");
}

/*
 * A service's worker, still root: grant_dir/<uid> (mode 0700, owned by
 * the job's user; grant_dir itself root's, or ours, and not writable by
 * others) into dir (len bytes). 0, or -1 with the reason logged.
 */
static int grant_dir_make(const agent_service_t *svc, const owner_t *o,
                          char *dir, size_t len)
{
    struct stat st;
    int         fd;

    dir[0] = '\0';
    if (svc->grant_dir[0] == '\0') {
        return 0;
    }
    /* Every user's ranks pass through it: 0755 whatever the umask
     * (systemd's UMask=0077). */
    if (mkdir(svc->grant_dir, 0755) == 0) {
        chmod(svc->grant_dir, 0755);
    } else if (errno != EEXIST) {
        dps_error("cannot make grant directory %s: %m", svc->grant_dir);
        return -1;
    }
    if (lstat(svc->grant_dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        dps_error("grant directory %s must be a directory owned by uid %u "
                  "and writable by it alone",
                  svc->grant_dir, (unsigned)geteuid());
        return -1;
    }
    if (snprintf(dir, len, "%s/%u", svc->grant_dir, (unsigned)o->uid) >=
        (int)len) {
        dps_error("grant directory %s: path too long", svc->grant_dir);
        dir[0] = '\0';
        return -1;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        dps_error("cannot make %s: %m", dir);
        return -1;
    }
    /* Whatever was there: ours to check, never to follow. */
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fchown(fd, o->uid, o->gid) != 0 || fchmod(fd, 0700) != 0) {
        dps_error("cannot give %s to uid %u: %m", dir, (unsigned)o->uid);
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    close(fd);
    return 0;
}

/*
 * A service's worker: become the job's user for good: its groups, gid
 * and uid, no capabilities, no way back (checked), no new privileges on
 * exec; first its grant directory (dir, len bytes; "" without one: the
 * ranks are then served over UCX). 0, or -1 with the reason logged: the
 * worker must not serve the job.
 */
static int become_owner(const agent_service_t *svc, const owner_t *o,
                        char *dir, size_t len)
{
    if (grant_dir_make(svc, o, dir, len) != 0) {
        dps_warn("job of %s: no DMA grants (its ranks are served over UCX)",
                 o->name);
        dir[0] = '\0';
    }
    if (geteuid() != 0) {
        /* A user's own service (not root): already the job's user, as
         * judge_credential made sure. */
        return geteuid() == o->uid ? 0 : -1;
    }
    if (initgroups(o->name, o->gid) != 0 || setgid(o->gid) != 0 ||
        setuid(o->uid) != 0) {
        dps_error("cannot become user %s (uid %u, gid %u): %m", o->name,
                  (unsigned)o->uid, (unsigned)o->gid);
        return -1;
    }
    /* setuid() from root to another uid drops every capability; that
     * nothing of root is left is checked, not assumed. */
    if (o->uid != 0 &&
        (setuid(0) == 0 || seteuid(0) == 0 || getuid() != o->uid ||
         geteuid() != o->uid || getgid() != o->gid || getegid() != o->gid)) {
        dps_error("still privileged after becoming uid %u: not serving",
                  (unsigned)o->uid);
        return -1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        dps_error("prctl(PR_SET_NO_NEW_PRIVS): %m");
        return -1;
    }
    /* Changing uid made us undumpable; the user may debug their worker. */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    return 0;
}

static void start_job(listener_t *l, lconn_t *c, const char *job,
                      const owner_t *o)
{
    char  gdir[4096];
    pid_t pid;
    int   fd = c->fd;

    /* Nothing buffered may be written twice, by parent and child. */
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        char why[128];

        snprintf(why, sizeof(why), "cannot start an agent: fork: %s",
                 strerror(errno));
        refuse(c, job, why);
        return;
    }
    if (pid == 0) {
        child_enter(l, fd);
        if (l->svc == NULL) {
            exit(l->serve(fd, job, l->dir, l->arg));
        }
        if (become_owner(l->svc, o, gdir, sizeof(gdir)) != 0) {
            send_line(fd, "refused",
                      "the service could not start a worker as this job's "
                      "user (see its log)");
            exit(1);
        }
        exit(l->serve(fd, job, gdir, l->arg));
    }
    if (o != NULL) {
        dps_info("job '%s' of %s (uid %u) from %s: worker pid %d", job,
                 o->name, (unsigned)o->uid, c->peer, (int)pid);
    } else {
        dps_info("job '%s' from %s: agent pid %d", job, c->peer, (int)pid);
    }
    job_add(l, pid, job, o != NULL ? o->name : "");
    conn_close(c);
}

/*
 * A service's judgement of a complete hello: the credential decodes
 * (munged: genuine, not expired, not replayed, ours to decode), its
 * payload binds it to this connection's challenge and this job, and its
 * uid is one we serve. Fills o; 0, or -1 with the refusal sent.
 */
static int judge_credential(listener_t *l, lconn_t *c, const char *job,
                            const char *cred, owner_t *o)
{
    char          want[160], err[600], pwbuf[4096];
    struct passwd pw, *pwp = NULL;
    void         *payload = NULL;
    size_t        plen = 0;
    int           rc;

    rc = dps_munge_decode(l->svc->munge_socket, cred, &payload, &plen, &o->uid,
                          &o->gid, err, sizeof(err));
    if (rc != DPS_OK) {
        refuse(c, job, err);
        return -1;
    }
    dps_munge_payload(c->nonce, job, want, sizeof(want));
    if (strcmp(payload, want) != 0) {
        snprintf(err, sizeof(err),
                 "credential of uid %u is not for this connection and job "
                 "(made for another challenge or job: a replay)",
                 (unsigned)o->uid);
        free(payload);
        refuse(c, job, err);
        return -1;
    }
    free(payload);
    if (geteuid() != 0 && o->uid != geteuid()) {
        snprintf(err, sizeof(err),
                 "this service runs as uid %u, not root: it serves that "
                 "user's jobs only, not uid %u's",
                 (unsigned)geteuid(), (unsigned)o->uid);
        refuse(c, job, err);
        return -1;
    }
    if (o->uid == 0 && !l->svc->allow_root) {
        refuse(c, job,
               "jobs of root (uid 0) are not served (allow_root = no in the "
               "service's configuration)");
        return -1;
    }
    if (getpwuid_r(o->uid, &pw, pwbuf, sizeof(pwbuf), &pwp) != 0 ||
        pwp == NULL) {
        snprintf(err, sizeof(err),
                 "uid %u has no account on this host (no passwd entry): the "
                 "service cannot start a worker as that user",
                 (unsigned)o->uid);
        refuse(c, job, err);
        return -1;
    }
    snprintf(o->name, sizeof(o->name), "%s", pw.pw_name);
    return 0;
}

/* Read what the client sent and judge the hello once it is complete. */
static void conn_read(listener_t *l, lconn_t *c)
{
    uint8_t secret[DPS_SECRET_LEN];
    char    job[DPS_LISTEN_NAME_MAX + 1], err[512];
    char    cred[DPS_CRED_MAX + 1];
    owner_t o;
    int     eof = 0, rc;

    while (c->len < sizeof(c->buf)) {
        ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);

        if (n > 0) {
            c->len += (size_t)n;
        } else if (n == 0) {
            eof = 1;
            break;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        } else {
            snprintf(err, sizeof(err), "receive error: %s", strerror(errno));
            refuse(c, NULL, err);
            return;
        }
    }
    rc = l->svc != NULL
             ? dps_service_decode_hello(c->buf, c->len, job, sizeof(job), cred,
                                        sizeof(cred), err, sizeof(err))
             : dps_listen_decode_hello(c->buf, c->len, job, sizeof(job),
                                       secret, err, sizeof(err));
    if (rc == DPS_ERR_AGAIN) {
        if (!eof) {
            return;
        }
        if (c->len == 0) {
            /* Port probes and health checks: not worth a warning. */
            dps_info("%s closed the connection without a hello", c->peer);
            conn_close(c);
            return;
        }
        snprintf(err, sizeof(err),
                 "malformed hello: connection closed "
                 "after %zu bytes",
                 c->len);
        refuse(c, NULL, err);
        return;
    }
    if (rc != DPS_OK) {
        refuse(c, NULL, err);
        return;
    }
    if (l->svc != NULL) {
        memset(&o, 0, sizeof(o));
        if (judge_credential(l, c, job, cred, &o) == 0) {
            start_job(l, c, job, &o);
        }
        return;
    }
    rc = dps_secret_check(l->dir, job, secret, err, sizeof(err));
    memset(secret, 0, sizeof(secret));
    if (rc != DPS_OK) {
        refuse(c, job, err);
        return;
    }
    start_job(l, c, job, NULL);
}

/* A service's challenge to a new connection: a fresh nonce, and the uid
 * the job restricts its credential's decoding to. 0, or -1 (refused). */
static int challenge(lconn_t *c)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t           r[DPS_NONCE_HEX / 2];
    char              text[DPS_NONCE_HEX + 32];
    int               i;

    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        refuse(c, NULL, "no random bytes for a challenge");
        return -1;
    }
    for (i = 0; i < (int)sizeof(r); i++) {
        c->nonce[2 * i] = hex[r[i] >> 4];
        c->nonce[2 * i + 1] = hex[r[i] & 15];
    }
    c->nonce[DPS_NONCE_HEX] = '\0';
    snprintf(text, sizeof(text), "%s %u", c->nonce, (unsigned)geteuid());
    send_line(c->fd, "challenge", text);
    return 0;
}

static void accept_all(listener_t *l)
{
    struct sockaddr_storage ss;
    char                    peer[PEER_MAX];
    lconn_t                *c;
    socklen_t               sl;
    int                     fd, on = 1, idle = 30, intvl = 10, cnt = 3;

    for (;;) {
        sl = sizeof(ss);
        fd = accept4(l->lfd, (struct sockaddr *)&ss, &sl,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                dps_warn("accept: %m: not accepting for %.0f ms",
                         LISTEN_PAUSE_SEC * 1000);
                l->accept_after = dps_now() + LISTEN_PAUSE_SEC;
            }
            return;
        }
        addr_str((struct sockaddr *)&ss, sl, peer, sizeof(peer));
        if (l->nconns == LISTEN_MAX_PENDING) {
            dps_warn("refused %s: %d connections already waiting for "
                     "their hello",
                     peer, LISTEN_MAX_PENDING);
            send_line(fd, "refused",
                      "busy: too many connections waiting "
                      "for their hello");
            close(fd);
            continue;
        }
        /* The job's agent inherits the socket: if the host dies without
         * a FIN, keep-alive probes still end the agent (~1 min). */
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
        c = &l->conns[l->nconns++];
        c->fd = fd;
        c->len = 0;
        c->deadline = dps_now() + LISTEN_HELLO_SEC;
        snprintf(c->peer, sizeof(c->peer), "%s", peer);
        if (l->svc != NULL && challenge(c) != 0) {
            l->nconns--;
        }
    }
}

/* Refuse clients past their deadline, then drop closed slots. */
static void sweep(listener_t *l)
{
    double now = dps_now();
    char   why[96];
    int    i, j;

    for (i = 0; i < l->nconns; i++) {
        lconn_t *c = &l->conns[i];

        if (c->fd >= 0 && now >= c->deadline) {
            snprintf(why, sizeof(why),
                     "no complete hello within %.0f s "
                     "(%zu bytes received)",
                     LISTEN_HELLO_SEC, c->len);
            refuse(c, NULL, why);
        }
    }
    for (i = j = 0; i < l->nconns; i++) {
        if (l->conns[i].fd >= 0) {
            if (i != j) {
                l->conns[j] = l->conns[i];
            }
            j++;
        }
    }
    l->nconns = j;
}

static int poll_timeout(const listener_t *l)
{
    double now = dps_now(), t = LISTEN_BACKSTOP_MS / 1000.0;
    int    i;

    for (i = 0; i < l->nconns; i++) {
        if (l->conns[i].deadline - now < t) {
            t = l->conns[i].deadline - now;
        }
    }
    if (l->accept_after > now && l->accept_after - now < t) {
        t = l->accept_after - now;
    }
    return t <= 0 ? 0 : (int)(t * 1000.0) + 1;
}

static void drain(int fd)
{
    char buf[64];

    while (read(fd, buf, sizeof(buf)) > 0) {
    }
}

/* A service's stop: SIGTERM to every worker, SIGKILL to those left after
 * AGENT_SERVICE_STOP_SEC; all reaped. */
static void stop_workers(listener_t *l)
{
    double deadline = dps_now() + AGENT_SERVICE_STOP_SEC;
    size_t i;

    for (i = 0; i < l->njobs; i++) {
        kill(l->jobs[i].pid, SIGTERM);
    }
    while (l->njobs > 0 && dps_now() < deadline) {
        usleep(10000);
        reap(l);
    }
    for (i = 0; i < l->njobs; i++) {
        dps_warn("worker of job '%s' (pid %d) still running after %.0f s: "
                 "killing it",
                 l->jobs[i].name, (int)l->jobs[i].pid, AGENT_SERVICE_STOP_SEC);
        kill(l->jobs[i].pid, SIGKILL);
    }
    /* Killed processes go at once; a few seconds is a backstop. */
    deadline = dps_now() + 3.0;
    while (l->njobs > 0 && dps_now() < deadline) {
        usleep(10000);
        reap(l);
    }
}

int agent_listen_run(const char *hostport, const char *secret_dir,
                     const agent_service_t *svc, agent_serve_fn serve,
                     void *arg)
{
    struct pollfd pfd[2 + LISTEN_MAX_PENDING];
    listener_t    l;
    char          err[512];
    int           i, n, np;

    memset(&l, 0, sizeof(l));
    l.dir = secret_dir;
    l.svc = svc;
    l.serve = serve;
    l.arg = arg;
    l.sig[0] = l.sig[1] = -1;
    dps_log_set_who(svc != NULL ? "service" : "listener");
    signal(SIGPIPE, SIG_IGN);
    /* Made now, owned by us, before anyone else can squat the name. */
    if (svc == NULL &&
        dps_secret_dir_prepare(secret_dir, 1, err, sizeof(err)) != DPS_OK) {
        dps_error("%s", err);
        return 1;
    }
    if (pipe2(l.sig, O_NONBLOCK | O_CLOEXEC) != 0) {
        dps_error("pipe2: %m");
        return 1;
    }
    sig_wfd = l.sig[1];
    set_signals(on_signal);
    l.lfd = open_socket(hostport);
    if (l.lfd < 0) {
        goto out;
    }
    if (svc == NULL) {
        dps_info("secrets in %s", secret_dir);
    } else {
        dps_info("jobs authenticated by MUNGE (%s); grants in %s; jobs of "
                 "root %s",
                 svc->munge_socket[0] ? svc->munge_socket : "default socket",
                 svc->grant_dir[0] ? svc->grant_dir : "(none: no DMA grants)",
                 svc->allow_root ? "served" : "refused");
    }
    while (!stop_signal) {
        double now = dps_now();

        np = 0;
        pfd[np++] = (struct pollfd){l.sig[0], POLLIN, 0};
        pfd[np++] =
            (struct pollfd){l.lfd, l.accept_after > now ? 0 : POLLIN, 0};
        for (i = 0; i < l.nconns; i++) {
            pfd[np++] = (struct pollfd){l.conns[i].fd, POLLIN, 0};
        }
        n = poll(pfd, (nfds_t)np, poll_timeout(&l));
        if (n < 0 && errno != EINTR) {
            dps_error("poll: %m");
            break;
        }
        if (n > 0 && pfd[0].revents) {
            drain(l.sig[0]);
        }
        reap(&l);
        for (i = 0; n > 0 && i < l.nconns; i++) {
            if (pfd[2 + i].revents) {
                conn_read(&l, &l.conns[i]);
            }
        }
        sweep(&l);
        if (n > 0 && (pfd[1].revents & POLLIN)) {
            accept_all(&l);
        }
    }
    if (stop_signal && svc != NULL) {
        dps_info("stopping on signal %d: ending %zu worker(s); their jobs go "
                 "on with stock MPI",
                 (int)stop_signal, l.njobs);
        stop_workers(&l);
    } else if (stop_signal) {
        dps_info("stopping on signal %d; %zu running job(s) keep their "
                 "agents",
                 (int)stop_signal, l.njobs);
    }
    for (i = 0; i < l.nconns; i++) {
        if (l.conns[i].fd >= 0) {
            close(l.conns[i].fd);
        }
    }
    close(l.lfd);
out:
    set_signals(SIG_DFL);
    close(l.sig[0]);
    close(l.sig[1]);
    sig_wfd = -1;
    free(l.jobs);
    return stop_signal ? 0 : 1;
}
