// A fake libnccl for the tests of package lgflow/dist/nccl on machines
// without a GPU: the symbols and signatures of NCCL 2's nccl.h, with
// "device" buffers in host memory. Communicators made from one unique id
// in one process meet in memory: a collective blocks until every rank of
// the id called it, then sums (or copies) across the ranks' buffers, so
// that goroutines of one test act as ranks. Built by the tests with
// cc -shared -fPIC.
//
// Knobs (read at every call): FAKE_NCCL_VERSION, ncclGetVersion's code
// (default 22105, NCCL 2.21.5); FAKE_NCCL_ASYNC_ERROR, the result that
// ncclCommGetAsyncError reports (default 0); FAKE_NCCL_SCALE, a factor
// that multiplies every sum (default 1: 2 makes a rank's sum what two
// ranks holding its buffer would get).
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char internal[128]; } ncclUniqueId;

enum { ok = 0, invalidArgument = 4, invalidUsage = 5 };

#define MAXR 16
#define MAXG 16

// group: the ranks of one unique id.
struct group {
	int used, key, nranks, arrived, generation, members;
	void *bufs[MAXR];
	size_t counts[MAXR];
	int kinds[MAXR], dtypes[MAXR], roots[MAXR];
};

struct comm {
	struct group *g;
	int rank, nranks;
};
typedef struct comm *ncclComm_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct group groups[MAXG];
static int ids, inits, aborts, destroys, calls, groupDepth, groupCalls;
static uintptr_t lastStream;

static int envInt(const char *name, int def) {
	const char *s = getenv(name);
	return s && *s ? atoi(s) : def;
}

int ncclGetVersion(int *version) {
	*version = envInt("FAKE_NCCL_VERSION", 22105);
	return ok;
}

// An id: 'N', a key, then bytes i*7+key, so that ncclCommInitRank can
// check that all 128 bytes arrived (the struct is passed by value).
int ncclGetUniqueId(ncclUniqueId *id) {
	pthread_mutex_lock(&mu);
	int key = ++ids % 250 + 1; // one byte
	pthread_mutex_unlock(&mu);
	id->internal[0] = 'N';
	id->internal[1] = (char)key;
	for (int i = 2; i < 128; i++) id->internal[i] = (char)(i * 7 + key);
	return ok;
}

int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
	if (id.internal[0] != 'N') return invalidArgument;
	int key = (unsigned char)id.internal[1];
	for (int i = 2; i < 128; i++)
		if (id.internal[i] != (char)(i * 7 + key)) return invalidArgument;
	if (nranks < 1 || nranks > MAXR || rank < 0 || rank >= nranks) return invalidArgument;
	pthread_mutex_lock(&mu);
	struct group *g = NULL;
	for (int i = 0; i < MAXG; i++)
		if (groups[i].used && groups[i].key == key) g = &groups[i];
	for (int i = 0; g == NULL && i < MAXG; i++)
		if (!groups[i].used) {
			g = &groups[i];
			memset(g, 0, sizeof *g);
			g->used = 1, g->key = key, g->nranks = nranks;
		}
	if (g == NULL || g->nranks != nranks) {
		pthread_mutex_unlock(&mu);
		return invalidUsage;
	}
	inits++;
	g->members++;
	pthread_mutex_unlock(&mu);
	struct comm *c = calloc(1, sizeof *c);
	c->g = g, c->rank = rank, c->nranks = nranks;
	*comm = c;
	return ok;
}

// collective waits for every rank of c's group, then applies the
// operation (kind 0: sum, 1: broadcast from root) to every rank's buffer.
static int collective(int kind, void *buf, size_t count, int dtype, int root, struct comm *c, void *stream) {
	if (dtype != 7 && dtype != 8) return invalidArgument;
	if (c == NULL) return invalidUsage;
	pthread_mutex_lock(&mu);
	calls++;
	lastStream = (uintptr_t)stream;
	struct group *g = c->g;
	g->bufs[c->rank] = buf, g->counts[c->rank] = count, g->kinds[c->rank] = kind;
	g->dtypes[c->rank] = dtype, g->roots[c->rank] = root;
	int gen = g->generation;
	if (++g->arrived < g->nranks) {
		while (g->generation == gen) pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
		return ok;
	}
	size_t esz = dtype == 7 ? 4 : 8;
	if (kind == 0) {
		int scale = envInt("FAKE_NCCL_SCALE", 1);
		for (size_t i = 0; i < count; i++) {
			double s = 0;
			float sf = 0;
			for (int r = 0; r < g->nranks; r++) {
				if (dtype == 7) sf += ((float *)g->bufs[r])[i];
				else s += ((double *)g->bufs[r])[i];
			}
			for (int r = 0; r < g->nranks; r++) {
				if (dtype == 7) ((float *)g->bufs[r])[i] = sf * (float)scale;
				else ((double *)g->bufs[r])[i] = s * scale;
			}
		}
	} else {
		for (int r = 0; r < g->nranks; r++)
			if (r != root) memcpy(g->bufs[r], g->bufs[root], count * esz);
	}
	g->arrived = 0;
	g->generation++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return ok;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op, ncclComm_t comm, void *stream) {
	if (send != recv || op != 0) return invalidArgument;
	return collective(0, recv, count, dtype, 0, comm, stream);
}

int ncclBroadcast(const void *send, void *recv, size_t count, int dtype, int root, ncclComm_t comm, void *stream) {
	if (send != recv || root < 0 || root >= comm->nranks) return invalidArgument;
	return collective(1, recv, count, dtype, root, comm, stream);
}

int ncclGroupStart(void) {
	pthread_mutex_lock(&mu);
	groupDepth++, groupCalls++;
	pthread_mutex_unlock(&mu);
	return ok;
}

int ncclGroupEnd(void) {
	pthread_mutex_lock(&mu);
	int d = --groupDepth;
	pthread_mutex_unlock(&mu);
	return d < 0 ? invalidUsage : ok;
}

int ncclCommGetAsyncError(ncclComm_t comm, int *err) {
	*err = envInt("FAKE_NCCL_ASYNC_ERROR", 0);
	return ok;
}

// release frees comm, and its group with its last member. mu is held.
static void release(struct comm *c) {
	if (--c->g->members == 0) c->g->used = 0;
	free(c);
}

int ncclCommAbort(ncclComm_t comm) {
	pthread_mutex_lock(&mu);
	aborts++;
	release(comm);
	pthread_mutex_unlock(&mu);
	return ok;
}

int ncclCommDestroy(ncclComm_t comm) {
	pthread_mutex_lock(&mu);
	destroys++;
	release(comm);
	pthread_mutex_unlock(&mu);
	return ok;
}

const char *ncclGetErrorString(int code) {
	switch (code) {
	case 0: return "no error";
	case 4: return "invalid argument";
	case 5: return "invalid usage";
	case 6: return "remote process exited or there was a network error";
	}
	return "fake error";
}

const char *ncclGetLastError(ncclComm_t comm) { return "fake last error"; }

// Counters for the tests.
int fakeInits(void) { return inits; }
int fakeAborts(void) { return aborts; }
int fakeDestroys(void) { return destroys; }
int fakeCalls(void) { return calls; }
int fakeGroupCalls(void) { return groupCalls; }
uintptr_t fakeLastStream(void) { return lastStream; }
