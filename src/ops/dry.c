// dry.c — the accounting-mode switch of the ops (see ops.h).
#include "ops.h"
int ops_dry_run = 0;
