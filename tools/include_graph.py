#!/usr/bin/env python3
"""include_graph.py — the module graph of src/ and its rules (no circles).

Each source file belongs to a module (MODULES: the longest matching path prefix wins). Two
checks, each printing what it found:

  1. includes (always): every `#include "..."` between two modules must be one the including
     module MAY include (ALLOWED). ALLOWED itself must be a layering (no cycle), so a legal
     include graph never closes a circle. Prints the folder-level graph: module -> modules.
  2. calls (with --symbols OBJ_DIR, the build's objects): a file that defines a symbol another
     file uses is a dependency of that file (nm). No circle of such dependencies may contain a
     file of a CHECKED module; circles inside the modules of OWNED_ELSEWHERE are listed as known.
     Includes alone cannot see these: comm.h declares the operations of comm.c and the grid of
     grid.c, and backend.h the back ends' constructors.

Usage: include_graph.py [--root DIR] [--symbols OBJ_DIR] [--dot]
Exit status 1 on a violation. To extend: add a module to MODULES and a line to ALLOWED
(what it may include), and, once its internal circles are gone, move it from
OWNED_ELSEWHERE to CHECKED.
"""
import argparse, collections, os, re, subprocess, sys

# path prefix (relative to the repository) -> module
MODULES = {
    'src/core': 'core',
    'src/config': 'config',
    'src/data': 'data',
    'src/backend': 'backend',              # the seam: backend.h, ops, profile, dry
    'src/backend/bf16.h': 'backend',
    'src/backend/cpu': 'backend/cpu',
    'src/backend/cuda': 'backend/cuda',
    'src/backend/no_cuda.c': 'backend/cuda',   # its stand-in in a build without CUDA
    'src/backend/select.c': 'backend/select',  # the registry: the one file that knows every back end
    'src/parallel': 'parallel',
    'src/model': 'model',
    'src/sim': 'sim',
    'src/store': 'store',
    'src/train': 'train',
    'src/tools': 'tools',
}

# module -> the modules it may include (besides itself). Lower layers first.
ALLOWED = {
    'core': set(),
    'config': {'core'},
    'data': {'core', 'config'},
    'backend': {'core'},
    'backend/cpu': {'core', 'backend'},
    'backend/cuda': {'core', 'backend'},
    'backend/select': {'core', 'backend', 'backend/cpu', 'backend/cuda'},
    'parallel': {'core', 'backend'},
    'model': {'core', 'config', 'backend', 'parallel'},
    'sim': {'core', 'config', 'backend', 'parallel'},
    'store': {'core', 'config', 'parallel', 'model'},
    'train': {'core', 'config', 'data', 'backend', 'parallel', 'model', 'store'},
    'tools': {'core', 'config', 'data', 'backend', 'backend/cpu', 'backend/cuda', 'backend/select',
              'parallel', 'model', 'sim', 'store', 'train'},
}

# Modules whose files may be in no circle of calls.
CHECKED = {'core', 'config', 'data', 'backend', 'backend/select', 'parallel', 'store', 'train', 'tools'}
# Modules whose internal circles their owners are breaking: reported, not failed.
OWNED_ELSEWHERE = {'model', 'sim', 'backend/cpu', 'backend/cuda'}

SRC_EXT = ('.c', '.h', '.cu', '.cuh')


def module_of(rel):
    best = None
    for prefix, mod in MODULES.items():
        if rel == prefix or rel.startswith(prefix + '/'):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, mod)
    return best[1] if best else None


def find_cycle(graph):
    """A cycle of `graph` (dict node -> set of nodes) as a list, or None."""
    colour, stack = {}, []

    def visit(v):
        colour[v] = 1
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if colour.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in colour:
                c = visit(w)
                if c:
                    return c
        stack.pop()
        colour[v] = 2
        return None

    for v in sorted(graph):
        if v not in colour:
            c = visit(v)
            if c:
                return c
    return None


def sccs(graph):
    """Strongly connected components of more than one node (Tarjan, iterative enough here)."""
    sys.setrecursionlimit(100000)
    index, low, on, st, out, n = {}, {}, set(), [], [], [0]
    nodes = set(graph) | {w for ws in graph.values() for w in ws}

    def sc(v):
        index[v] = low[v] = n[0]; n[0] += 1
        st.append(v); on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                sc(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            sc(v)
    return out


def include_check(root):
    bad = []
    graph = collections.defaultdict(set)
    for d, _, files in os.walk(os.path.join(root, 'src')):
        for f in sorted(files):
            if not f.endswith(SRC_EXT):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root)
            src_mod = module_of(rel)
            if src_mod is None:
                bad.append(f'{rel}: no module (add its folder to MODULES in tools/include_graph.py)')
                continue
            for ln, line in enumerate(open(path, encoding='utf-8', errors='replace'), 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                target = os.path.normpath(os.path.join(os.path.dirname(rel), m.group(1)))
                if not target.startswith('src/'):
                    continue      # tests/, fuzz/ helpers are not modules of the engine
                dst_mod = module_of(target)
                if dst_mod is None or dst_mod == src_mod:
                    continue
                graph[src_mod].add(dst_mod)
                if dst_mod not in ALLOWED.get(src_mod, set()):
                    bad.append(f'{rel}:{ln}: module {src_mod} includes {m.group(1)} (module {dst_mod}); '
                               f'{src_mod} may include only: {", ".join(sorted(ALLOWED.get(src_mod, ()))) or "nothing"}')
    return graph, bad


def symbol_check(root, objdir):
    defs, uses = {}, collections.defaultdict(set)
    for d, _, files in os.walk(objdir):
        for f in sorted(files):
            if not f.endswith('.o'):
                continue
            o = os.path.join(d, f)
            unit = os.path.relpath(o, objdir)[:-2]           # e.g. parallel/comm
            out = subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in 'TDBRC':
                    defs.setdefault(p[2], unit)
                elif len(p) == 2 and p[0] == 'U':
                    uses[unit].add(p[1])
    graph = collections.defaultdict(set)
    for unit, syms in uses.items():
        for s in syms:
            other = defs.get(s)
            if other and other != unit:
                graph[unit].add(other)

    def mod(unit):
        for ext in ('.c', '.cu'):
            m = module_of('src/' + unit + ext)
            if m:
                return m
        return module_of('src/' + unit)
    bad, known = [], []
    for comp in sccs(graph):
        mods = {mod(u) for u in comp}
        line = ' <-> '.join(comp)
        if mods & CHECKED:
            bad.append(f'a circle of calls: {line}')
        else:
            known.append(f'{line} (module {", ".join(sorted(m for m in mods if m))}: its owner breaks it)')
    return len(defs), bad, known


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    ap.add_argument('--symbols', metavar='OBJ_DIR', help="the build's object folder (build/obj): also check calls")
    ap.add_argument('--dot', action='store_true', help='print the module graph as Graphviz dot')
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    bad = []
    cyc = find_cycle({m: set(v) for m, v in ALLOWED.items()})
    if cyc:
        bad.append('the rules themselves are circular: ' + ' -> '.join(cyc))
    graph, ibad = include_check(root)
    bad += ibad
    if a.dot:
        print('digraph modules {')
        for m in sorted(graph):
            for t in sorted(graph[m]):
                print(f'  "{m}" -> "{t}";')
        print('}')
    else:
        print('module graph (includes between folders):')
        for m in sorted(set(ALLOWED) | set(graph)):
            print(f'  {m:15s} -> {", ".join(sorted(graph.get(m, ()))) or "-"}')
    cyc = find_cycle(graph)
    if cyc:
        bad.append('a circle of includes between modules: ' + ' -> '.join(cyc))
    n_sym = None
    if a.symbols:
        if not os.path.isdir(a.symbols):
            bad.append(f'--symbols {a.symbols}: no such folder (build first: make -j2 all)')
        else:
            n_sym, sbad, known = symbol_check(root, a.symbols)
            bad += sbad
            for k in known:
                print(f'known circle: {k}')
    for b in bad:
        print(f'violation: {b}')
    print(f'include_graph: {len(graph)} modules with includes, {len(bad)} violations'
          + (f'; calls checked over {n_sym} symbols' if n_sym is not None else ''))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
