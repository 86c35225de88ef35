// yaml_diag.h — the libfyaml diagnostics that manifests and hardware profiles are parsed with:
// quiet (nothing printed by the library), errors collected for the caller's own message that
// names the file and the line.
#pragma once
#include <libfyaml.h>

// A diag that collects errors instead of printing them (fy_diag_destroy it); dies if libfyaml
// cannot make one.
struct fy_diag *yaml_diag_collecting(void);
