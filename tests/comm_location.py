#!/usr/bin/env python3
"""comm_location.py — no collective on host memory through a device-bound entry point.

The collectives of src/parallel/comm.h come in two forms: comm_host_* take host
memory always; every other operation takes buffers where comm_set_device says (the device
on a GPU run). This scans C sources for calls of the device-bound operations and flags a
buffer argument that is host memory by its look in that file:
  - an address of a variable:           &x
  - a local array of the same file:     double mem[5]; ... comm_...(c, g, mem, ...)
  - a host allocation of the same file: x = xmalloc(...) / malloc / calloc / xcalloc /
                                        host_family(...) / xaligned_alloc(...)
  - a string literal or a compound literal
Usage: comm_location.py FILE...   prints one line per flagged call and, last, a summary
"device-bound calls: N (flagged: F); host calls: H"; exit status 1 if any is flagged.
"""
import re, sys

# operation -> indices (0-based) of its buffer arguments
DEVICE_OPS = {
    'comm_all_reduce': [2], 'comm_all_gather': [2, 3], 'comm_all_gather_cols': [2, 3],
    'comm_reduce_scatter': [2, 3], 'comm_broadcast': [2], 'comm_send': [2], 'comm_recv': [2],
    'comm_sendrecv': [2, 6],
}
HOST_OPS = ('comm_host_all_reduce', 'comm_host_broadcast', 'comm_host_send', 'comm_host_recv')
HOST_ALLOC = r'(?:x?malloc|x?calloc|xaligned_alloc|aligned_alloc|host_family|gpu_host_alloc)\s*\('


def strip_comments(s):
    s = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), s, flags=re.S)
    return re.sub(r'//[^\n]*', '', s)


def split_args(s, start):
    """Arguments of the call whose '(' is at s[start]; returns (args, end index)."""
    depth, cur, args, i = 0, [], [], start
    while i < len(s):
        ch = s[i]
        if ch in '([{':
            depth += 1
            if depth > 1: cur.append(ch)
        elif ch in ')]}':
            depth -= 1
            if depth == 0:
                args.append(''.join(cur).strip())
                return args, i
            cur.append(ch)
        elif ch == ',' and depth == 1:
            args.append(''.join(cur).strip()); cur = []
        else:
            cur.append(ch)
        i += 1
    return args, i


def host_names(s):
    names = set(re.findall(r'\b(?:double|float|int|int32_t|int64_t|uint8_t|uint16_t|char|unsigned char|size_t)\s+'
                           r'\**\s*([A-Za-z_]\w*)\s*\[', s))
    names |= set(re.findall(r'\b([A-Za-z_]\w*)\s*=(?!=)[^;]*?\b' + HOST_ALLOC, s))
    return names


def check(path):
    raw = open(path, encoding='utf-8').read()
    s = strip_comments(raw)
    hosts = host_names(s)
    flagged, n_dev, n_host = [], 0, 0
    for m in re.finditer(r'\b(comm_\w+)\s*\(', s):
        name = m.group(1)
        line = s.count('\n', 0, m.start()) + 1
        prev = s[max(0, m.start() - 40):m.start()]
        if re.search(r'\b(void|int|static|CommStat)\s+\**$', prev):   # a definition or declaration
            continue
        if name in HOST_OPS:
            n_host += 1
            continue
        if name not in DEVICE_OPS:
            continue
        n_dev += 1
        args, _ = split_args(s, m.end() - 1)
        for i in DEVICE_OPS[name]:
            if i >= len(args): continue
            a = re.sub(r'^\((?:const\s+)?\w+\s*\*\)\s*', '', args[i])   # a cast
            base = re.match(r'[A-Za-z_]\w*', a)
            why = None
            if a.startswith('&'): why = 'the address of a host variable'
            elif a.startswith('"') or a.startswith('(') and '{' in a: why = 'a literal'
            elif base and base.group(0) in hosts and not re.match(r'[A-Za-z_]\w*\s*(->|\.)', a):
                why = "'%s' is host memory in this file (a local array or a host allocation)" % base.group(0)
            if why:
                flagged.append('%s:%d: %s(..., %s, ...): %s; use comm_host_* (src/parallel/comm.h)'
                               % (path, line, name, args[i], why))
    return flagged, n_dev, n_host


def main(paths):
    flagged, n_dev, n_host = [], 0, 0
    for p in paths:
        f, d, h = check(p)
        flagged += f; n_dev += d; n_host += h
    for f in flagged: print(f)
    print('device-bound calls: %d (flagged: %d); host calls: %d' % (n_dev, len(flagged), n_host))
    return 1 if flagged else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
