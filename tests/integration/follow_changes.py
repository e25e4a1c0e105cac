"""Helpers of follow_changes.sh: make a tree, change it at random, compare two indexes.

  follow_changes.py make ROOT SEED
  follow_changes.py change ROOT SEED COUNT     prints one line per change made
  follow_changes.py compare A.jsonl B.jsonl    exit 1 and a report when they differ
"""
import json, os, random, subprocess, sys



def data(r, n):
    # Some files repeat others' blocks, as a real tree does.
    if r.random() < 0.3:
        return bytes([r.randrange(256)]) * n
    return r.randbytes(n)


def size(r):
    if r.random() < 0.8:
        return r.choice([1, 100, 3000, 4096, 5000, 9000])
    return r.choice([70000, 131072, 200000, 300000])


def files(root):
    out = []
    for d, _, names in os.walk(root):
        out += [os.path.join(d, n) for n in names if os.path.isfile(os.path.join(d, n)) and not os.path.islink(os.path.join(d, n))]
    return sorted(out)


def dirs(root):
    return sorted(d for d, _, _ in os.walk(root) if d != root)


def make(root, seed):
    r = random.Random(seed)
    # Enough files for many btrfs leaves, so that most records are carried, not looked at.
    for i in range(10):
        for j in range(5):
            d = os.path.join(root, f"d{i}", f"s{j}")
            os.makedirs(d, exist_ok=True)
            for k in range(50):
                with open(os.path.join(d, f"f{k}.bin"), "wb") as f:
                    f.write(data(r, size(r)))
    # nodatacow files are overwritten in place: the same extents, new data.
    os.makedirs(os.path.join(root, "nocow"))
    for k in range(4):
        p = os.path.join(root, "nocow", f"n{k}")
        open(p, "wb").close()
        subprocess.run(["chattr", "+C", p], check=True)
        with open(p, "wb") as f:
            f.write(r.randbytes(200000))
    fs = files(root)
    for k in range(8):
        os.link(fs[k * 97], os.path.join(root, f"d{k}", f"link{k}"))


def change(root, seed, count):
    r = random.Random(seed)
    made = []
    for n in range(count):
        fs, ds = files(root), dirs(root)
        kind = r.choice(["new", "delete", "modify", "append", "truncate", "rename", "move", "rename_dir",
                         "move_dir", "delete_dir", "link", "unlink_link", "mtime_restored", "chattr",
                         "dedupe", "defrag", "new_dir", "reflink_copy", "nocow_inplace", "copy", "copy_shifted", "read"])
        f = r.choice(fs) if fs else None
        d = r.choice(ds) if ds else root
        try:
            if kind == "new" or f is None:
                p = os.path.join(d, f"n{seed}_{n}")
                with open(p, "wb") as o: o.write(data(r, size(r)))
                kind = "new"
            elif kind == "delete":
                os.unlink(f)
            elif kind == "modify":
                with open(f, "r+b") as o: o.seek(r.randrange(max(1, os.path.getsize(f)))); o.write(b"xy")
            elif kind == "append":
                with open(f, "ab") as o: o.write(data(r, r.choice([10, 5000, 140000])))
            elif kind == "truncate":
                os.truncate(f, os.path.getsize(f) // 2)
            elif kind == "rename":
                os.rename(f, f + f".r{seed}_{n}")
            elif kind == "move":
                os.rename(f, os.path.join(d, os.path.basename(f) + f".m{seed}_{n}"))
            elif kind == "rename_dir":
                os.rename(d, d + f".r{seed}_{n}") if d != root else None
            elif kind == "move_dir":
                t = r.choice(ds) if ds else root
                if d != root and not (t + "/").startswith(d + "/"):
                    os.rename(d, os.path.join(t, os.path.basename(d) + f".m{seed}_{n}"))
            elif kind == "delete_dir":
                if d != root: subprocess.run(["rm", "-rf", d], check=True)
            elif kind == "link":
                os.link(f, os.path.join(d, f"l{seed}_{n}"))
            elif kind == "unlink_link":
                many = [x for x in fs if os.stat(x).st_nlink > 1]
                if many: os.unlink(r.choice(many))
            elif kind == "mtime_restored":
                st = os.stat(f)
                with open(f, "r+b") as o: o.write(b"z")
                os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
            elif kind == "chattr":
                subprocess.run(["chattr", r.choice(["+A", "-A", "+d", "-d"]), f], check=True)
            elif kind == "dedupe":
                # Another tool shares data: extents change, mtime does not.
                g = r.choice(fs)
                n_ = min(os.path.getsize(f), os.path.getsize(g)) // 4096 * 4096
                if n_ and f != g:
                    subprocess.run(["xfs_io", "-c", f"dedupe {f} 0 0 {n_}", g], check=True, capture_output=True)
            elif kind == "defrag":
                subprocess.run(["btrfs", "filesystem", "defragment", "-f", f], check=True, capture_output=True)
            elif kind == "new_dir":
                p = os.path.join(d, f"nd{seed}_{n}")
                os.makedirs(os.path.join(p, "inner"))
                for k in range(3):
                    with open(os.path.join(p, "inner", f"x{k}"), "wb") as o: o.write(data(r, size(r)))
            elif kind == "nocow_inplace":
                # Rewritten in place with its old mtime restored and renamed: only the data
                # tells; the extents are those recorded.
                ps = [x for x in fs if "/nocow/" in x]
                if ps:
                    p = r.choice(ps)
                    st = os.stat(p)
                    with open(p, "r+b") as o: o.write(r.randbytes(8192))
                    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
                    os.rename(p, p + f".i{seed}_{n}")
            elif kind == "copy":
                # A new duplicate, not sharing anything yet: the plan dedupes it.
                subprocess.run(["cp", "--reflink=never", f, os.path.join(d, f"p{seed}_{n}")], check=True)
            elif kind == "copy_shifted":
                # A partial duplicate: another file's data 12 KiB into a new one.
                big = [x for x in fs if os.path.getsize(x) >= 100000 and "/nocow/" not in x]
                if big:
                    with open(r.choice(big), "rb") as i, open(os.path.join(d, f"s{seed}_{n}"), "wb") as o:
                        o.write(data(r, 12288) + i.read())
            elif kind == "read":
                # A backup's reads: relatime writes atimes, nothing else changes.
                for x in os.listdir(d):
                    p = os.path.join(d, x)
                    if os.path.isfile(p) and not os.path.islink(p):
                        with open(p, "rb") as i: i.read()
            elif kind == "reflink_copy":
                subprocess.run(["cp", "--reflink=always", f, os.path.join(d, f"c{seed}_{n}")], check=True)
            made.append(kind)
        except (FileNotFoundError, FileExistsError, OSError) as e:
            made.append(f"{kind} (skipped: {e.__class__.__name__})")
    print(" ".join(made))


def load(path):
    recs, dirs_ = {}, {}
    for line in open(path):
        j = json.loads(line)
        if j["type"] == "file":
            for k in ("reused", "fs"):
                j.pop(k, None)
            recs[j["path"]] = j
        elif j["type"] == "dir":
            # Its times too: a followed scan carries a directory whose times are unchanged.
            # Not a subvolume's top (inode 256): btrfs sets a moved subvolume's ctime in
            # memory, which stat shows, but does not write its inode item, which a
            # followed scan reads. (Its entries did not change.)
            times = (j.get("mtime_ns"), j.get("ctime_ns")) if j["ino"] != 256 else ()
            dirs_[j["path"]] = (j["ino"],) + times
    return recs, dirs_


def compare(a, b):
    ra, da = load(a)
    rb, db = load(b)
    bad = []
    for p in sorted(set(ra) | set(rb)):
        if p not in ra: bad.append(f"only in {b}: {p}")
        elif p not in rb: bad.append(f"only in {a}: {p}")
        elif ra[p] != rb[p]:
            diff = {k: (ra[p].get(k), rb[p].get(k)) for k in set(ra[p]) | set(rb[p]) if ra[p].get(k) != rb[p].get(k)}
            bad.append(f"{p} differs: {diff}")
    if da != db:
        bad.append(f"directories differ: only in {a}: {sorted(set(da.items()) - set(db.items()))[:5]}; "
                   f"only in {b}: {sorted(set(db.items()) - set(da.items()))[:5]}")
    if bad:
        print("\n".join(bad[:20]))
        sys.exit(1)
    print(f"equal: {len(ra)} files, {len(da)} directories")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make": make(sys.argv[2], int(sys.argv[3]))
    elif cmd == "change": change(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "compare": compare(sys.argv[2], sys.argv[3])
