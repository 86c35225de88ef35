// linear_kinds.h — the list of linear kinds, the one registration line of a kind.
//
// X(NAME, name): LINEAR_<NAME> in the LinearKind enum (config.h), "name" as model.linear's
// value (config.c's schema), and kind_<name> (the kind's file src/model/kind_<name>.c, one
// `const Kind kind_<name>`) in the registry (model/kind.c). Adding a kind is its file, one line
// here and its tests (docs/architecture.md, "Adding a linear kind"). The order is the enum's
// values: append, never reorder (run databases and checkpoints store the names, but the values
// are part of the test fixtures).
#pragma once
#define LINEAR_KINDS(X) \
    X(DENSE, dense)     \
    X(COLA, cola)       \
    X(SVD, svd)         \
    X(LAX, lax)
