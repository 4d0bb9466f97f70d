/* SPDX-License-Identifier: Apache-2.0 */
/* Replacing files whole (host/src/io/outfile.c and outfile.h), which every
 * writer of the library and the CLI goes through: links are followed, FIFOs
 * are written in place instead of being replaced by a file, a file behind an
 * open descriptor (/dev/stdout), a link loop, a directory or an empty name is
 * refused, a stale temporary file from a killed
 * run is stepped over, and an aborted write leaves the old file as it was. */
#define _DEFAULT_SOURCE   /* symlink, mkdtemp, cfmakeraw */
#define _XOPEN_SOURCE 600 /* posix_openpt, grantpt, unlockpt, ptsname */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <fcntl.h>
#include <unistd.h>

#include "io/outfile.h"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/ntpu_outfile_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(outfile, .init = make_dir, .fini = remove_dir);

static const char *at(const char *name)
{
    static char p[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *get(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static ntpu_status replace(const char *path, const char *text, char *err)
{
    ntpu_outfile o;
    ntpu_status st = ntpu_outfile_open(&o, path, err, 256);
    if (st != NTPU_OK)
        return st;
    cr_assert_eq(write(o.fd, text, strlen(text)), (ssize_t)strlen(text));
    return ntpu_outfile_commit(&o, err, 256);
}

static int entries(void) /* files in dir: no temporary file may be left */
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(outfile, replaces_a_file_and_keeps_its_mode)
{
    char err[256];
    put(at("a"), "old");
    cr_assert_eq(chmod(at("a"), 0640), 0);
    cr_assert_eq(replace(at("a"), "new", err), NTPU_OK, "%s", err);
    cr_assert_str_eq(get(at("a")), "new");
    struct stat sb;
    cr_assert_eq(stat(at("a"), &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0640);
    cr_assert_eq(entries(), 1);
}

Test(outfile, abort_leaves_the_old_file)
{
    char err[256];
    put(at("a"), "old");
    ntpu_outfile o;
    cr_assert_eq(ntpu_outfile_open(&o, at("a"), err, sizeof err), NTPU_OK);
    cr_assert_eq(write(o.fd, "half", 4), 4);
    ntpu_outfile_abort(&o);
    cr_assert_str_eq(get(at("a")), "old");
    cr_assert_eq(entries(), 1);
}

Test(outfile, follows_links_also_to_a_file_not_yet_there)
{
    char err[256];
    cr_assert_eq(mkdir(at("real"), 0755), 0);
    cr_assert_eq(symlink("real/ck", at("link")), 0); /* relative, dangling */
    cr_assert_eq(replace(at("link"), "one", err), NTPU_OK, "%s", err);
    struct stat sb;
    cr_assert_eq(lstat(at("link"), &sb), 0);
    cr_assert(S_ISLNK(sb.st_mode), "the link was replaced by a file");
    cr_assert_str_eq(get(at("real/ck")), "one");
    cr_assert_eq(replace(at("link"), "two", err), NTPU_OK, "%s", err);
    cr_assert_str_eq(get(at("real/ck")), "two");
    cr_assert(ntpu_outfile_same(at("link"), at("real/ck")));
    cr_assert(ntpu_outfile_same(at("real/../real/new"), at("real/new")));
    cr_assert_not(ntpu_outfile_same(at("real/new"), at("new")));
}

Test(outfile, writes_a_fifo_in_place)
{
    char err[256];
    cr_assert_eq(mkfifo(at("fifo"), 0600), 0);
    cr_assert_eq(ntpu_outfile_check(at("fifo"), err, sizeof err), NTPU_OK, "%s", err); /* without a reader */
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) { /* the reader: copies what comes through the FIFO into a file */
        char buf[64];
        FILE *in = fopen(at("fifo"), "r"), *out = fopen(at("got"), "w");
        size_t n = in && out ? fread(buf, 1, sizeof buf, in) : 0;
        _exit(out && fwrite(buf, 1, n, out) == n && fclose(out) == 0 ? 0 : 1);
    }
    cr_assert_eq(replace(at("fifo"), "through", err), NTPU_OK, "%s", err);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cr_assert_str_eq(get(at("got")), "through");
    struct stat sb;
    cr_assert_eq(lstat(at("fifo"), &sb), 0);
    cr_assert(S_ISFIFO(sb.st_mode), "the FIFO was replaced by a file");
    cr_assert_not(ntpu_outfile_same(at("fifo"), at("fifo")), "both writes reach a FIFO");
}

/* A terminal (here a pseudo-terminal's slave end, /dev/pts/N) is written in place: renaming a file over
 * it would remove the device node (as -o /dev/null once did, run as root). */
Test(outfile, writes_a_terminal_in_place)
{
    char err[256];
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    cr_assert_geq(master, 0);
    cr_assert_eq(grantpt(master), 0);
    cr_assert_eq(unlockpt(master), 0);
    const char *slave = ptsname(master);
    cr_assert_not_null(slave);
    struct termios t; /* raw: the bytes come through unchanged, no echo */
    int sfd = open(slave, O_RDWR | O_NOCTTY);
    cr_assert_geq(sfd, 0);
    cr_assert_eq(tcgetattr(sfd, &t), 0);
    cfmakeraw(&t);
    cr_assert_eq(tcsetattr(sfd, TCSANOW, &t), 0);
    cr_assert_eq(ntpu_outfile_check(slave, err, sizeof err), NTPU_OK, "%s", err);
    cr_assert_eq(replace(slave, "tty", err), NTPU_OK, "%s", err);
    char buf[8] = {0};
    cr_assert_eq(read(master, buf, 3), 3);
    cr_assert_str_eq(buf, "tty");
    struct stat sb;
    cr_assert_eq(stat(slave, &sb), 0);
    cr_assert(S_ISCHR(sb.st_mode), "%s was replaced", slave);
    close(sfd);
    close(master);
}

Test(outfile, keeps_permission_bits_but_not_set_id)
{
    char err[256];
    put(at("run"), "old");
    cr_assert_eq(chmod(at("run"), 04755), 0);
    cr_assert_eq(replace(at("run"), "new", err), NTPU_OK, "%s", err);
    struct stat sb;
    cr_assert_eq(stat(at("run"), &sb), 0);
    cr_assert_eq(sb.st_mode & 07777, 0755);
}

Test(outfile, names_up_to_the_limit)
{
    char err[1024], name[300];
    memset(name, 'n', 255);
    name[255] = '\0';
    cr_assert_eq(replace(at(name), "long", err), NTPU_OK, "%s", err); /* its temporary file: a short name */
    cr_assert_str_eq(get(at(name)), "long");
    name[255] = 'n';
    name[256] = '\0';
    cr_assert_eq(ntpu_outfile_check(at(name), err, sizeof err), NTPU_ERR_FILE); /* before any work, not at rename */
    cr_assert(strstr(err, "too long"), "%s", err);
    cr_assert_eq(entries(), 1);
}

Test(outfile, refuses_a_file_behind_an_open_descriptor)
{
    char err[256], proc[64];
    put(at("a"), "old");
    FILE *f = fopen(at("a"), "a"); /* as a shell's > a.txt: then /dev/stdout leads to a.txt */
    cr_assert_not_null(f);
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(f));
    cr_assert_eq(ntpu_outfile_check(proc, err, sizeof err), NTPU_ERR_FILE);
    cr_assert(strstr(err, "open descriptor"), "%s", err);
    fclose(f);
    cr_assert_str_eq(get(at("a")), "old");
}

Test(outfile, refuses_a_link_loop)
{
    char err[256];
    cr_assert_eq(symlink("loop2", at("loop1")), 0);
    cr_assert_eq(symlink("loop1", at("loop2")), 0);
    cr_assert_eq(ntpu_outfile_check(at("loop1"), err, sizeof err), NTPU_ERR_FILE);
    cr_assert(strstr(err, "symbolic links"), "%s", err);
}

Test(outfile, refuses_directories_and_empty_names)
{
    char err[256];
    cr_assert_eq(ntpu_outfile_check(dir, err, sizeof err), NTPU_ERR_FILE);
    cr_assert(strstr(err, "directory"), "%s", err);
    cr_assert_eq(ntpu_outfile_check("", err, sizeof err), NTPU_ERR_INVALID_ARG);
    cr_assert(strstr(err, "empty"), "%s", err);
    cr_assert_eq(ntpu_outfile_check(at("missing/x"), err, sizeof err), NTPU_ERR_FILE);
    cr_assert_eq(entries(), 0);
}

Test(outfile, steps_over_a_stale_temporary_file)
{
    char err[256], stale[700];
    snprintf(stale, sizeof stale, "%s.tmp%ld.0", at("a"), (long)getpid()); /* a killed run with this PID */
    put(stale, "stale");
    cr_assert_eq(replace(at("a"), "new", err), NTPU_OK, "%s", err);
    cr_assert_str_eq(get(at("a")), "new");
}

static long dead_pid(void) /* a PID that was a process a moment ago and is none now */
{
    pid_t p = fork();
    cr_assert_geq(p, 0);
    if (p == 0)
        _exit(0);
    cr_assert_eq(waitpid(p, NULL, 0), p);
    return (long)p;
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

Test(outfile, removes_temporary_files_of_runs_that_were_killed)
{
    char err[256], name[6][700];
    const long dead = dead_pid(), live = (long)getppid();
    snprintf(name[0], sizeof name[0], "%s.tmp%ld.0", at("a"), dead);           /* the model file's */
    snprintf(name[1], sizeof name[1], "%s.state.new.tmp%ld.2", at("a"), dead); /* its sidecar's */
    snprintf(name[2], sizeof name[2], "%s/.ntpu-tmp%ld.0", dir, dead);         /* beside a long name */
    snprintf(name[3], sizeof name[3], "%s.tmp%ld.0", at("a"), live);           /* a run still writing */
    snprintf(name[4], sizeof name[4], "%s.tmp%ld.0", at("b"), dead);           /* another file's */
    snprintf(name[5], sizeof name[5], "%s.tmpx.0", at("a"));                   /* not a temporary file's name */
    for (int i = 0; i < 6; i++)
        put(name[i], "stale");
    cr_assert_eq(replace(at("a"), "new", err), NTPU_OK, "%s", err);
    cr_assert_str_eq(get(at("a")), "new");
    for (int i = 0; i < 3; i++)
        cr_assert_not(exists(name[i]), "%s was left", name[i]);
    for (int i = 3; i < 6; i++)
        cr_assert(exists(name[i]), "%s was removed", name[i]);
}

Test(outfile, refuses_a_fifo_whose_reader_went_away)
{
    char err[256];
    cr_assert_eq(mkfifo(at("fifo"), 0600), 0);
    ntpu_outfile o;
    /* Without a reader the open would block for good: after 5 s it fails instead, naming the reason. */
    cr_assert_eq(ntpu_outfile_open(&o, at("fifo"), err, sizeof err), NTPU_ERR_FILE);
    cr_assert(strstr(err, "no process has been reading the FIFO for 5 s"), "%s", err);
}
