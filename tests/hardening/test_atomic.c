/* test_atomic — zp_io_atomic (common/zp_io.h), deterministically: a writer process dies half-way through
 * (SIGKILL, _exit, abort) or aborts its write, and the previous file must be byte-identical, with no
 * temporary file left in the directory; a completed write replaces it. Prints one line per case and
 * "bad inputs tried: N" (the interrupted writes). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zp_io.h"

static int g_fail, g_cases, g_bad;
static char g_dir[256];

#define CHECK(cond, ...)                                     \
    do {                                                     \
        if (!(cond)) {                                       \
            printf("  FAIL %s:%d: ", __FILE__, __LINE__);    \
            printf(__VA_ARGS__);                             \
            printf("\n");                                    \
            g_fail++;                                        \
            return;                                          \
        }                                                    \
    } while (0)

static char *slurp(const char *path, size_t *len)
{
    char *t = NULL;
    if (zp_io_read_file(path, 64u << 20, &t, len) != ZP_OK)
        return NULL;
    return t;
}

/* Entries of the test directory other than "." and "..". */
static int dir_entries(char names[][256], int cap)
{
    DIR *d = opendir(g_dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n < cap)
            snprintf(names[n], 256, "%.200s", e->d_name);
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

static void clear_dir(void)
{
    char names[64][256];
    int n = dir_entries(names, 64);
    for (int i = 0; i < n && i < 64; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%.200s", g_dir, names[i]);
        unlink(p);
    }
}

enum death { DIE_SIGKILL, DIE_EXIT, DIE_ABORT, DIE_NONE_ABORTED, DIE_NONE_COMMITTED };
static const char *const death_name[] = {"SIGKILL", "_exit(3)", "abort()", "zp_io_atomic_abort", "commit"};

/* A child writes `size` bytes of 'N' to path through zp_io_atomic and dies after half of them. */
static void writer(const char *path, size_t size, enum death how)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGABRT, SIG_DFL);
        zp_io_atomic *a;
        if (zp_io_atomic_open(path, &a) != ZP_OK)
            _exit(10);
        FILE *f = zp_io_atomic_file(a);
        for (size_t i = 0; i < size / 2; i++)
            fputc('N', f);
        fflush(f); /* the half is in the temporary file, not only in the stdio buffer */
        switch (how) {
        case DIE_SIGKILL: raise(SIGKILL); break;
        case DIE_EXIT: _exit(3);
        case DIE_ABORT: abort();
        case DIE_NONE_ABORTED: zp_io_atomic_abort(a); _exit(0);
        case DIE_NONE_COMMITTED:
            for (size_t i = size / 2; i < size; i++)
                fputc('N', f);
            _exit(zp_io_atomic_commit(a) == ZP_OK ? 0 : 11);
        }
        _exit(12);
    }
    int status = 0;
    waitpid(pid, &status, 0);
}

static void interrupted_write(enum death how, int previous_exists, size_t size)
{
    g_cases++;
    clear_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/out.html", g_dir);
    const char old[] = "<html>the previous report</html>\n";
    if (previous_exists) {
        CHECK(zp_io_write_file(path, old, sizeof old - 1) == ZP_OK, "writing the previous file: %s",
              zp_error_message());
    }
    writer(path, size, how);
    char names[8][256];
    int n = dir_entries(names, 8);
    size_t len = 0;
    char *now = slurp(path, &len);
    if (how == DIE_NONE_COMMITTED) {
        CHECK(now && len == size && now[0] == 'N' && now[size - 1] == 'N', "completed write not in place (%zu bytes)",
              len);
    } else if (previous_exists) {
        g_bad++;
        CHECK(now != NULL, "the previous file is gone after %s", death_name[how]);
        CHECK(len == sizeof old - 1 && memcmp(now, old, len) == 0,
              "the previous file changed after %s (%zu bytes now)", death_name[how], len);
    } else {
        g_bad++;
        CHECK(now == NULL, "a file appeared although the writer died (%s)", death_name[how]);
    }
    free(now);
    CHECK(n == (previous_exists || how == DIE_NONE_COMMITTED ? 1 : 0),
          "%d entries left in the directory after %s (first: %s)", n, death_name[how], n ? names[0] : "");
    if (how == DIE_NONE_COMMITTED)
        printf("writer completes %zu bytes (previous file %s) -> replaced, no temporary left\n", size,
               previous_exists ? "present" : "absent");
    else
        printf("bad input writer stops after %zu of %zu bytes (%s), previous file %s -> %s, no temporary left\n",
               size / 2, size, death_name[how], previous_exists ? "present" : "absent",
               previous_exists ? "byte-identical" : "still absent");
}

static void errors(void)
{
    g_cases++;
    zp_io_atomic *a = NULL;
    CHECK(zp_io_atomic_open("", &a) == ZP_EINVAL, "empty path accepted");
    CHECK(zp_io_atomic_open(g_dir, &a) == ZP_EINVAL, "a directory accepted as output");
    char p[512];
    snprintf(p, sizeof p, "%s/no/such/dir/x", g_dir);
    CHECK(zp_io_atomic_open(p, &a) != ZP_OK, "a missing directory accepted");
    g_bad += 3;
    printf("bad input output paths '', a directory, a missing directory -> refused with a message\n");
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "%s/zp-atomic-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    const size_t sizes[] = {2, 1 << 16, 4 << 20};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int prev = 1; prev >= 0; prev--)
            for (int how = DIE_SIGKILL; how <= DIE_NONE_COMMITTED; how++)
                interrupted_write((enum death)how, prev, sizes[s]);
    errors();
    clear_dir();
    rmdir(g_dir);
    printf("bad inputs tried: %d\n", g_bad);
    printf("%d cases, %d failed\n", g_cases, g_fail);
    return g_fail ? 1 : 0;
}
