// storetestlib.h — helpers shared by the store tests (test_store.c, test_db.c): a temporary
// folder, running a function in a child with its stderr captured (for the exit-2 refusals),
// and raw SQLite queries that read the run database behind the code under test.
#pragma once
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "store/db.h"

static char TMPDIR_[256];

static void tmp_path(char *buf, size_t n, const char *name) {
    if ((size_t)snprintf(buf, n, "%s/%s", TMPDIR_, name) >= n) { fprintf(stderr, "path too long\n"); exit(1); }
}

// Run fn(arg) in a child with stderr captured; returns its exit status (128+sig if killed).
static int in_child(void (*fn)(void *), void *arg, char *err, size_t n) {
    char path[300];
    tmp_path(path, sizeof path, "child_stderr.txt");
    fflush(stdout); fflush(stderr);
    pid_t p = fork();
    if (p == 0) {
        if (!freopen(path, "w", stderr)) _exit(99);
        fn(arg);
        fflush(stderr);
        _exit(0);
    }
    int st = 0;
    waitpid(p, &st, 0);
    err[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) { size_t k = fread(err, 1, n - 1, f); err[k] = 0; fclose(f); }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static sqlite3 *raw_open(const char *path) {
    sqlite3 *s = NULL;
    if (sqlite3_open(path, &s) != SQLITE_OK) { fprintf(stderr, "raw open %s failed\n", path); exit(1); }
    sqlite3_busy_timeout(s, 5000);
    return s;
}
// First column of the first row as text ("" if none / NULL; "SQL error: ..." if it fails).
static void q_text(sqlite3 *s, const char *sql, char *out, size_t n) {
    sqlite3_stmt *st = NULL;
    out[0] = 0;
    if (sqlite3_prepare_v2(s, sql, -1, &st, NULL) != SQLITE_OK) { snprintf(out, n, "SQL error: %s", sqlite3_errmsg(s)); return; }
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) snprintf(out, n, "%s", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

// First column of the first row as a number (NAN if none / NULL).
static double q_num(sqlite3 *s, const char *sql) {
    char t[256]; q_text(s, sql, t, sizeof t);
    return t[0] ? atof(t) : NAN;
}

// A run's identity as the trainer fills it, for one process (tp = pp = dp = 1) and a fixed
// peak of 100 GFLOP/s; each test sets its own version, configuration and sizes on top.
static RunInfo runinfo_for_test(const char *exp, const char *variant, const char *uid) {
    RunInfo ri;
    memset(&ri, 0, sizeof ri);
    runinfo_host_facts(&ri);
    snprintf(ri.uid, sizeof ri.uid, "%s", uid);
    snprintf(ri.experiment, sizeof ri.experiment, "%s", exp);
    snprintf(ri.variant, sizeof ri.variant, "%s", variant);
    snprintf(ri.manifest_sha256, sizeof ri.manifest_sha256, "%064d", 1);
    ri.tp = ri.pp = ri.dp = ri.world_size = 1;
    ri.peak_gflops = 100;
    return ri;
}

// rundb_open(path) in a child (in_child): for the refusals that exit 2.
static void rundb_open_child(void *path) { rundb_open((const char *)path); }
