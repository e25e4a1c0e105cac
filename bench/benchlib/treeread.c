/* treeread: the floors of bench/bench-dedupe, at the least CPU per file.
 *
 *   treeread read ROOT N    reads every regular file under ROOT once
 *   treeread stat ROOT N    lstat()s every entry under ROOT
 *   treeread stat-inode ROOT N
 *                           the same in inode order: directories are listed as
 *                           an elevator goes (the next inode found up from the
 *                           last one listed, the lowest once none is above), and
 *                           each directory's entries are stat'ed in inode order,
 *                           subdirectories only when listed (what oans-scan does
 *                           on a spinning disk on ext4 and XFS)
 *   treeread sorted ROOT N  lists the regular files under ROOT (N threads), maps
 *                           each one's first extent (FIEMAP), then reads them once
 *                           in that physical order, one thread: each file is asked
 *                           for (POSIX_FADV_WILLNEED) while the files before it,
 *                           up to 64 MiB or 512 files, are still being read, so
 *                           that the device has the next requests queued in disk
 *                           order
 *
 * N threads share a stack of directories; a thread takes a directory, lists it
 * (getdents through readdir) and stats or reads its entries relative to the
 * directory's descriptor (openat with O_NOFOLLOW, one 1 MiB buffer per thread,
 * plain read() until EOF), pushing subdirectories for any thread to take.
 * Symlinks are never followed. Prints the number of entries (stat) or bytes
 * read (read). Compiled by the harness: cc -O2 -pthread.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static char **stack;
/* stat-inode: a min-heap of directories by (pass, inode); a directory found below the
 * last one listed waits for the next pass. */
static unsigned long long *stack_ino, *stack_pass, pass, at;
static size_t depth, cap, busy;
static int reading, sorting, by_inode;
static unsigned long long total;

/* sorted: every regular file, with its first extent's physical offset. */
struct file { unsigned long long physical, size; char *path; };
static struct file *files;
static size_t nfiles, capfiles;

static unsigned long long first_physical(int fd) {
  struct { struct fiemap f; struct fiemap_extent e; } m;
  memset(&m, 0, sizeof m);
  m.f.fm_length = ~0ULL;
  m.f.fm_extent_count = 1;
  if (ioctl(fd, FS_IOC_FIEMAP, &m.f) || m.f.fm_mapped_extents == 0) return ~0ULL;
  return m.e.fe_physical;
}

static void list_file(int dirfd, const char *dir, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) { close(fd); return; }
  unsigned long long physical = first_physical(fd);
  close(fd);
  size_t len = strlen(dir) + strlen(name) + 2;
  char *path = malloc(len);
  if (!path) { perror("malloc"); exit(2); }
  snprintf(path, len, "%s/%s", dir, name);
  pthread_mutex_lock(&mu);
  if (nfiles == capfiles) {
    capfiles = capfiles ? capfiles * 2 : 4096;
    files = realloc(files, capfiles * sizeof *files);
    if (!files) { perror("realloc"); exit(2); }
  }
  files[nfiles++] = (struct file){physical, (unsigned long long)st.st_size, path};
  pthread_mutex_unlock(&mu);
}

static int by_physical(const void *a, const void *b) {
  const struct file *x = a, *y = b;
  return x->physical < y->physical ? -1 : x->physical > y->physical;
}

/* Reads the listed files in physical order; the files ahead, up to 64 MiB, asked for. */
static void read_sorted(void) {
  qsort(files, nfiles, sizeof *files, by_physical);
  char *buf = malloc(1 << 20);
  int *fds = malloc((nfiles + 1) * sizeof *fds);
  if (!buf || !fds) { perror("malloc"); exit(2); }
  size_t ahead = 0;
  unsigned long long window = 0;
  for (size_t i = 0; i < nfiles; i++) {
    while (ahead < nfiles && (ahead <= i || (window < (64ULL << 20) && ahead - i < 512))) {
      fds[ahead] = open(files[ahead].path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NOATIME);
      if (fds[ahead] < 0) fds[ahead] = open(files[ahead].path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
      if (fds[ahead] >= 0) posix_fadvise(fds[ahead], 0, 0, POSIX_FADV_WILLNEED);
      window += files[ahead].size;
      ahead++;
    }
    if (fds[i] >= 0) {
      ssize_t n;
      while ((n = read(fds[i], buf, 1 << 20)) > 0) total += (unsigned long long)n;
      close(fds[i]);
    }
    window -= files[i].size;
  }
  free(fds);
  free(buf);
}

static void swap_at(size_t a, size_t b) {
  char *p = stack[a]; stack[a] = stack[b]; stack[b] = p;
  unsigned long long i = stack_ino[a]; stack_ino[a] = stack_ino[b]; stack_ino[b] = i;
  i = stack_pass[a]; stack_pass[a] = stack_pass[b]; stack_pass[b] = i;
}

static int before(size_t a, size_t b) {
  return stack_pass[a] != stack_pass[b] ? stack_pass[a] < stack_pass[b] : stack_ino[a] < stack_ino[b];
}

static void push(char *path, unsigned long long ino) {
  if (depth == cap) {
    cap = cap ? cap * 2 : 1024;
    stack = realloc(stack, cap * sizeof *stack);
    stack_ino = realloc(stack_ino, cap * sizeof *stack_ino);
    stack_pass = realloc(stack_pass, cap * sizeof *stack_pass);
    if (!stack || !stack_ino || !stack_pass) { perror("realloc"); exit(2); }
  }
  stack[depth] = path;
  stack_ino[depth] = ino;
  stack_pass[depth] = ino >= at ? pass : pass + 1;
  for (size_t i = depth++; by_inode && i > 0 && before(i, (i - 1) / 2); i = (i - 1) / 2)
    swap_at(i, (i - 1) / 2);
}

/* The next directory: the last pushed, or in stat-inode the elevator's next. */
static char *pop(void) {
  if (!by_inode) return stack[--depth];
  char *top = stack[0];
  pass = stack_pass[0];
  at = stack_ino[0];
  stack[0] = stack[--depth];
  stack_ino[0] = stack_ino[depth];
  stack_pass[0] = stack_pass[depth];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < depth && before(l, m)) m = l;
    if (r < depth && before(r, m)) m = r;
    if (m == i) break;
    swap_at(i, m);
    i = m;
  }
  return top;
}

struct entry { unsigned long long ino; unsigned char type; char *name; };

static int by_ino(const void *a, const void *b) {
  const struct entry *x = a, *y = b;
  return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static void read_file(int dirfd, const char *name, char *buf) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NOATIME);
  if (fd < 0) fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n;
  unsigned long long got = 0;
  while ((n = read(fd, buf, 1 << 20)) > 0) got += (unsigned long long)n;
  close(fd);
  __atomic_add_fetch(&total, got, __ATOMIC_RELAXED);
}

/* One entry of a directory being listed. */
static void visit_entry(int dfd, const char *path, const char *name, unsigned char type, unsigned long long ino,
                        char *buf, unsigned long long *entries) {
  struct stat st;
  st.st_ino = ino;
  /* stat-inode: a subdirectory is stat'ed when it is listed (its inode may lie far away). */
  if ((!reading || type == DT_UNKNOWN) && !(by_inode && type == DT_DIR)) {
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) return;
    type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
  }
  (*entries)++;
  if (type == DT_DIR) {
    size_t len = strlen(path) + strlen(name) + 2;
    char *sub = malloc(len);
    if (!sub) { perror("malloc"); exit(2); }
    snprintf(sub, len, "%s/%s", path, name);
    pthread_mutex_lock(&mu);
    push(sub, (unsigned long long)st.st_ino);
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
  } else if (type == DT_REG && sorting) {
    list_file(dfd, path, name);
  } else if (type == DT_REG && reading) {
    read_file(dfd, name, buf);
  }
}

/* Lists one directory: files read or stat'ed, subdirectories pushed; in stat-inode, the
 * entries stat'ed in inode order. */
static void visit(char *path, char *buf) {
  struct stat st;
  if (by_inode && lstat(path, &st)) { free(path); return; }
  int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) { free(path); return; }
  DIR *d = fdopendir(dfd);
  if (!d) { close(dfd); free(path); return; }
  struct dirent *e;
  unsigned long long entries = 0;
  struct entry *list = NULL;
  size_t n = 0, room = 0;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (!by_inode) {
      visit_entry(dfd, path, e->d_name, e->d_type, e->d_ino, buf, &entries);
      continue;
    }
    if (n == room) {
      room = room ? room * 2 : 256;
      list = realloc(list, room * sizeof *list);
      if (!list) { perror("realloc"); exit(2); }
    }
    list[n].ino = e->d_ino;
    list[n].type = e->d_type;
    list[n].name = strdup(e->d_name);
    if (!list[n++].name) { perror("strdup"); exit(2); }
  }
  qsort(list, n, sizeof *list, by_ino);
  for (size_t i = 0; i < n; i++) {
    visit_entry(dfd, path, list[i].name, list[i].type, list[i].ino, buf, &entries);
    free(list[i].name);
  }
  free(list);
  closedir(d);
  free(path);
  if (!reading) __atomic_add_fetch(&total, entries, __ATOMIC_RELAXED);
}

static void *worker(void *arg) {
  (void)arg;
  char *buf = reading && !sorting ? malloc(1 << 20) : NULL;
  if (reading && !sorting && !buf) { perror("malloc"); exit(2); }
  for (;;) {
    pthread_mutex_lock(&mu);
    while (!depth && busy) pthread_cond_wait(&cv, &mu);
    if (!depth) {
      pthread_cond_broadcast(&cv);
      pthread_mutex_unlock(&mu);
      break;
    }
    char *path = pop();
    busy++;
    pthread_mutex_unlock(&mu);
    visit(path, buf);
    pthread_mutex_lock(&mu);
    busy--;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  free(buf);
  return NULL;
}

int main(int argc, char **argv) {
  int n = argc == 4 ? atoi(argv[3]) : 0;
  if (n < 1 || (strcmp(argv[1], "read") && strcmp(argv[1], "stat") && strcmp(argv[1], "stat-inode") &&
                strcmp(argv[1], "sorted"))) {
    fprintf(stderr, "usage: treeread read|stat|stat-inode|sorted ROOT THREADS\n");
    return 2;
  }
  sorting = !strcmp(argv[1], "sorted");
  reading = sorting || !strcmp(argv[1], "read");
  by_inode = !strcmp(argv[1], "stat-inode");
  struct stat root;
  if (stat(argv[2], &root)) { perror(argv[2]); return 2; }
  push(strdup(argv[2]), (unsigned long long)root.st_ino);
  pthread_t *t = calloc((size_t)n, sizeof *t);
  for (int i = 0; i < n; i++)
    if (pthread_create(&t[i], NULL, worker, NULL)) { perror("pthread_create"); return 2; }
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  if (sorting) read_sorted();
  printf("%llu\n", total);
  return 0;
}
