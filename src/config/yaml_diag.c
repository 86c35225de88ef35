// yaml_diag.c — see yaml_diag.h.
#include <stdbool.h>
#include "yaml_diag.h"
#include "../core/check.h"

struct fy_diag *yaml_diag_collecting(void) {
    struct fy_diag_cfg dc;
    fy_diag_cfg_default(&dc);
    dc.fp = NULL;
    dc.colorize = false;
    struct fy_diag *diag = fy_diag_create(&dc);
    CHECK(diag, "fy_diag_create failed");
    fy_diag_set_collect_errors(diag, true);
    return diag;
}
