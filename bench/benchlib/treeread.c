/* treeread: the floors of bench/bench-dedupe, at the least CPU per file.
 *
 *   treeread read ROOT N    reads every regular file under ROOT once
 *   treeread stat ROOT N    lstat()s every entry under ROOT
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
static size_t depth, cap, busy;
static int reading, sorting;
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

static void push(char *path) {
  if (depth == cap) {
    cap = cap ? cap * 2 : 1024;
    stack = realloc(stack, cap * sizeof *stack);
    if (!stack) { perror("realloc"); exit(2); }
  }
  stack[depth++] = path;
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

/* Lists one directory: files read or stat'ed, subdirectories pushed. */
static void visit(char *path, char *buf) {
  int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) { free(path); return; }
  DIR *d = fdopendir(dfd);
  if (!d) { close(dfd); free(path); return; }
  struct dirent *e;
  unsigned long long entries = 0;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    unsigned char type = e->d_type;
    if (!reading || type == DT_UNKNOWN) {
      struct stat st;
      if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW)) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
    }
    entries++;
    if (type == DT_DIR) {
      size_t len = strlen(path) + strlen(e->d_name) + 2;
      char *sub = malloc(len);
      if (!sub) { perror("malloc"); exit(2); }
      snprintf(sub, len, "%s/%s", path, e->d_name);
      pthread_mutex_lock(&mu);
      push(sub);
      pthread_cond_signal(&cv);
      pthread_mutex_unlock(&mu);
    } else if (type == DT_REG && sorting) {
      list_file(dfd, path, e->d_name);
    } else if (type == DT_REG && reading) {
      read_file(dfd, e->d_name, buf);
    }
  }
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
    char *path = stack[--depth];
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
  if (n < 1 || (strcmp(argv[1], "read") && strcmp(argv[1], "stat") && strcmp(argv[1], "sorted"))) {
    fprintf(stderr, "usage: treeread read|stat|sorted ROOT THREADS\n");
    return 2;
  }
  sorting = !strcmp(argv[1], "sorted");
  reading = sorting || !strcmp(argv[1], "read");
  push(strdup(argv[2]));
  pthread_t *t = calloc((size_t)n, sizeof *t);
  for (int i = 0; i < n; i++)
    if (pthread_create(&t[i], NULL, worker, NULL)) { perror("pthread_create"); return 2; }
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  if (sorting) read_sorted();
  printf("%llu\n", total);
  return 0;
}
