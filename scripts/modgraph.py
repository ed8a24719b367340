#!/usr/bin/env python3
"""List `crate::` / `super::` edges between modules of src/ (test modules excluded) and print cycles.

Usage: scripts/modgraph.py [DEPTH] [-v]. DEPTH 1 (default): edges between top-level modules;
2: between sibling modules one level below (e.g. health::measure -> health::rank). -v lists
the edges. Exits 1 when there is a cycle. A rough check (it reads paths, not name resolution)."""
import os, re, sys, itertools
depth = int(sys.argv[1]) if len(sys.argv) > 1 else 1
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src')
def modpath(f):
    rel = os.path.relpath(f, root)[:-3].split(os.sep)
    if rel[-1] in ('mod', 'lib'): rel = rel[:-1]
    return rel
edges = {}
for d, _, fs in os.walk(root):
    for n in fs:
        if not n.endswith('.rs'): continue
        f = os.path.join(d, n)
        mp = modpath(f)
        if not mp or mp[0] == 'bin': continue
        src = open(f).read()
        # drop test modules: from `#[cfg(test)]` followed by `mod` to the end of the file
        m = re.search(r'#\[cfg\(test\)\]\s*(pub(\(crate\))?\s+)?mod\s', src)
        if m: src = src[:m.start()]
        src = re.sub(r'//[^\n]*', '', src)
        # expand `use crate::a::{b, c}` groups roughly: take first segments after crate::
        refs = set()
        for m in re.finditer(r'\bcrate::((?:\w+::)*\w+)(::\{([^}]*)\})?', src):
            base = m.group(1).split('::')
            if m.group(3) and len(base) < depth:
                for part in m.group(3).split(','):
                    p = part.strip().split('::')[0].split(' ')[0]
                    if p and p != 'self': refs.add(tuple(base + [p]))
            refs.add(tuple(base))
        # `super::x` in module a::b (file a/b.rs or a/b/mod.rs) is a::x
        for m in re.finditer(r'\b((?:super::)+)((?:\w+::)*\w+)', src):
            up = m.group(1).count('super::')
            refs.add(tuple(mp[:len(mp) - up] + m.group(2).split('::')))
        me = tuple(mp[:depth])
        for r in refs:
            tgt = tuple(r[:depth])
            if len(r) < depth: continue
            # only module-level: stop at the first item that is not a module path we know
            if tgt[:depth-1] != me[:depth-1] and depth > 1: continue
            if tgt != me:
                edges.setdefault(me, set()).add(tgt)
known = set()
for d, ds, fs in os.walk(root):
    for n in fs:
        if n.endswith('.rs'):
            mp = modpath(os.path.join(d, n))
            if mp: known.add(tuple(mp[:depth]))
edges = {a: {b for b in bs if b in known} for a, bs in edges.items()}
def name(t): return '::'.join(t)
if '-v' in sys.argv:
    for a in sorted(edges): print(name(a), '->', ', '.join(sorted(map(name, edges[a]))))
# strongly connected components (Tarjan)
idx, low, st, on, comps, c = {}, {}, [], set(), [], [0]
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: comps.append(comp)
sys.setrecursionlimit(10000)
for v in list(known):
    if v not in idx: sc(v)
for comp in comps: print('cycle:', ' <-> '.join(sorted(map(name, comp))))
print(f'{len(comps)} cycle(s) at depth {depth}')
sys.exit(1 if comps else 0)
