// config_diff.h — two configurations compared key by key, each difference with its key's
// change class (config.h ConfigChangeClass), and what a resume may change: a run resumed
// with another configuration says which keys changed, refuses a change of the model, and
// refuses a change of the run's meaning (data, batch, seed, schedule, optimizer, numerics,
// evaluation) unless each such key is allowed explicitly (build/train --allow-change KEY,
// make exp RESUME=1 ALLOW_CHANGE="KEY ..."). docs/configuration.md, "Resuming with changes".
#pragma once
#include <stdio.h>

#include "config.h"

// A configuration from the JSON config_to_json writes (a checkpoint's or a run's recorded
// one): defaults, then each key of the text whose value differs from the default, set as a
// manifest sets it (so config_finalize's rules on explicit keys hold). A key this engine
// does not have is left out (a newer engine's); one it has that the text lacks keeps its
// default (an older engine's). Text that is not such JSON, or a value the schema refuses:
// exit 2 naming `where`.
void config_from_json(Config *c, const char *json, const char *where);

typedef struct {
    int key;               // schema index (config_schema)
    char before[96];       // the values as config_format_value writes them
    char after[96];
} ConfigChange;

// The keys whose values differ, in schema order, compared as values at the key's type
// (1e4 and 10000 are the same rope_theta). At most cap of them into out; returns the count.
int config_diff(const Config *before, const Config *after, ConfigChange *out, int cap);

// May this class of key change when a run resumes? 1 for layout and recording.
int config_change_is_free(ConfigChangeClass c);

// Who is resumed, for the messages: "RESUME: <name> <verb> a different model: model.<key> is
// X in <held_in> and Y now", e.g. "…/step_4.h5" "was written by" "the checkpoint".
typedef struct {
    const char *name, *verb, *held_in;
} ResumeSource;

// A resume of a run that ran with `before_json` (config_to_json text) continuing with `now`:
// prints every changed key with its class and both values on `out`; refuses (exit 2) a change
// of the model, and a change of the run's meaning unless its key is among `allowed`; refuses
// an allowed key that is not a key (a hint names the nearest); notes an allowed key that did
// not change. Returns the record of the choice, the changes of the run's meaning that were
// allowed (malloc'd: "train.lr 0.003 -> 0.001 (schedule)", "; " between them), or NULL when
// there were none.
char *config_resume_changes(const char *before_json, const Config *now, const char *const *allowed, int n_allowed,
                            const ResumeSource *src, FILE *out);
