/*
 * rpkv.h -- the C API of the rpkv client library (librpkv.so.0).
 *
 * A handle (rpkv *) is one connection to one keyspace of a kvserver. Puts
 * and deletes are durable when they return RPKV_OK: the record is written
 * one-sided into the connection's log segment and committed by the server,
 * which persists record and index slot together. Gets are one-sided RDMA
 * reads; the server's CPU is not involved. The C API is a thin layer over
 * the C++ kv::Client (kv/client/client.h); both may be used in one program.
 *
 *   rpkv *db;
 *   if (rpkv_connect("127.0.0.1:7400", "default", NULL, &db) != RPKV_OK) {
 *     fprintf(stderr, "%s\n", rpkv_errmsg(NULL));
 *     return 1;
 *   }
 *   rpkv_put(db, "k", 1, "v", 1);
 *   void *v; size_t n;
 *   if (rpkv_get(db, "k", 1, &v, &n) == RPKV_OK) rpkv_free(v);
 *   rpkv_close(db);
 *
 * Return codes. Every int-returning function returns RPKV_OK (0),
 * RPKV_NOT_FOUND (1, not an error: the key -- or for rpkv_connect the
 * keyspace -- does not exist) or a negative RPKV_E_* code. Test for
 * success with `== RPKV_OK`, not `>= 0`. The codes map one-to-one from
 * the C++ kv::StatusCode: RPKV_NOT_FOUND is kNotFound and every other
 * status code c is -c, so the values are stable; RPKV_E_NOMEM and
 * RPKV_E_INTERNAL are the C layer's own. rpkv_strerror() names a code.
 *
 * Error messages. rpkv_errmsg(db) returns the message of the calling
 * thread's most recent call on db that did not return RPKV_OK (a sentence a
 * person can act on, e.g. "unavailable: cannot connect to 127.0.0.1:7400:
 * connection refused -- is kvserver running?"). Messages are kept per
 * handle *and* per thread, so threads sharing a handle never see each
 * other's messages. rpkv_connect cannot return a handle when it fails, so
 * its message (and that of any call given a NULL handle) is kept in a
 * thread-local slot read with rpkv_errmsg(NULL).
 *
 * Out-parameters. On any return other than RPKV_OK the out-pointers a
 * function was given are reset (*out and *value to NULL, *value_len to 0,
 * *version to 0) so that a caller may free or inspect them unconditionally.
 * (librpma leaves out-pointers untouched on failure; rpkv resets them
 * because rpkv_connect's contract is to leave *out NULL.)
 *
 * Thread-safety. Every function may be called from any thread. A handle may
 * be shared by many threads; their calls on it are serialized (one
 * connection, one queue), so for parallelism open one handle per thread.
 * rpkv_close(db) must not run concurrently with another call on db, and db
 * must not be used after it. No function keeps a pointer the caller passed
 * in after it returns: keys, values and option strings are copied.
 *
 * Limits (the C++ API checks them; errors are RPKV_E_INVAL with the limit
 * in the message): keys are 1..1024 bytes of any value (NUL bytes too);
 * values are 0..the keyspace's max value size (rpkv_max_value_size());
 * keyspace names are 1..63 bytes of [A-Za-z0-9_.-].
 *
 * No C++ exception ever reaches the caller, and a bad argument never
 * aborts: a NULL pointer where an object is required is RPKV_E_INVAL.
 */
#ifndef RPKV_RPKV_H
#define RPKV_RPKV_H 1

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define RPKV_API __attribute__((visibility("default")))
#else
#define RPKV_API
#endif

#define RPKV_VERSION_MAJOR 0
#define RPKV_VERSION_MINOR 1
#define RPKV_VERSION_PATCH 0

/* ---------------------------------------------------------------------- */
/* return codes                                                            */
/* ---------------------------------------------------------------------- */

#define RPKV_OK 0        /* success */
#define RPKV_NOT_FOUND 1 /* the key (rpkv_connect: keyspace) does not exist */
/* An argument is invalid: a NULL pointer, a key not 1..1024 bytes, a value
 * over the keyspace's limit, a malformed server address or keyspace name,
 * an access key over 64 bytes, a version of 0. */
#define RPKV_E_INVAL (-2)
/* A record read back failed verification (CRC, key, keyspace) even after
 * bounded retries. */
#define RPKV_E_CORRUPTION (-3)
/* An I/O error on the server's pool. */
#define RPKV_E_IO (-4)
/* The keyspace is full (its log, or the key's index buckets), or the server
 * had no log segment to grant; deletes still work. */
#define RPKV_E_NOSPACE (-5)
/* The server cannot be reached or went away (connection refused, lost,
 * shutting down, too many connections). A write in flight when the
 * connection was lost may or may not have been applied. */
#define RPKV_E_UNAVAILABLE (-6)
/* The operation (or the connect) did not finish within its timeout. */
#define RPKV_E_TIMEDOUT (-7)
/* A transient condition; retrying may succeed. */
#define RPKV_E_BUSY (-8)
/* Refused by admission: the keyspace's access key is missing or wrong. */
#define RPKV_E_PERMISSION (-9)
/* A conditional write's condition did not hold (rpkv_put_if_absent on a
 * present key, rpkv_*_if_version on a key at another version or absent);
 * nothing was changed. */
#define RPKV_E_CONDITION_FAILED (-10)
/* Cluster: the server does not own the key's shard at the map epoch the
 * request carried; re-read the cluster map and retry. Never returned by a
 * single server. */
#define RPKV_E_WRONG_SHARD (-11)
/* Out of memory in the client library. */
#define RPKV_E_NOMEM (-100)
/* A bug in the library (an unexpected exception or status); the message
 * says what. */
#define RPKV_E_INTERNAL (-101)

/* How a call waits for the server and the NIC. */
typedef enum rpkv_wait {
  RPKV_WAIT_DEFAULT = 0, /* the library's choice (kv::ClientOptions::wait) */
  RPKV_WAIT_POLL = 1,    /* spin on the completion queue: lowest latency, the
                            calling thread keeps one core busy while waiting */
  RPKV_WAIT_BLOCK = 2,   /* sleep on the completion channel: no CPU while
                            waiting, a wake-up per reply */
  RPKV_WAIT_ADAPTIVE = 3 /* spin for spin_us, then sleep: the latency of
                            polling for fast replies, no burnt core for slow
                            ones (the library's default today) */
} rpkv_wait;

/* ---------------------------------------------------------------------- */
/* options                                                                 */
/* ---------------------------------------------------------------------- */

/*
 * Connection options. Always initialize with rpkv_options_init() and then
 * set fields: struct_size records which version of the struct the caller
 * was compiled against, so later versions of the library can add fields
 * at the end (they take their defaults when struct_size does not cover
 * them) without breaking programs built against this header. A field left
 * 0 means the library's default (that of kv::ClientOptions), given below.
 */
typedef struct rpkv_options {
  size_t struct_size;     /* sizeof(rpkv_options); set by rpkv_options_init */
  int create_if_missing;  /* non-zero: create the keyspace when it does not
                             exist (needs kvserver --allow_create) */
  const char* access_key; /* NUL-terminated secret of the keyspace (kvserver
                             --access_keys), at most 64 bytes; NULL or "":
                             none. Copied by rpkv_connect. */
  uint32_t connect_timeout_ms; /* 0: 5000 */
  uint32_t op_timeout_ms;      /* per operation; 0: 10000 */
  int wait;                    /* an rpkv_wait; 0: RPKV_WAIT_DEFAULT */
  uint32_t spin_us; /* RPKV_WAIT_ADAPTIVE: microseconds to spin before
                       sleeping; 0: 50 */
} rpkv_options;

/*
 * Zeroes *opts (every field its default) and sets opts->struct_size. Does
 * nothing when opts is NULL. Thread-safe.
 */
RPKV_API void rpkv_options_init(rpkv_options* opts);

/* ---------------------------------------------------------------------- */
/* connection                                                              */
/* ---------------------------------------------------------------------- */

typedef struct rpkv rpkv; /* opaque: one connection to one keyspace */

/*
 * Connects to the kvserver at `server` ("HOST:PORT", e.g. "127.0.0.1:7400")
 * and is admitted to `keyspace`. `opts` may be NULL for the defaults.
 * A `server` of the form "etcd://HOST:PORT[,HOST:PORT...]" names the etcd
 * of an rpkv cluster named "rpkv" instead: the handle then routes every
 * key to its shard's node (docs/cluster.md, "The client"), and
 * RPKV_NOT_FOUND also means the cluster has no such keyspace.
 * On RPKV_OK, *out is a new handle owned by the caller (rpkv_close it).
 * On any other return *out is NULL and rpkv_errmsg(NULL) in the calling
 * thread says why.
 *
 * Returns RPKV_OK, or:
 *  - RPKV_NOT_FOUND: the keyspace does not exist (create_if_missing not
 *    set, or the server lacks --allow_create); the message names it and
 *    how to create it. This is the only positive failure of rpkv_connect.
 *  - RPKV_E_INVAL: out, server or keyspace NULL; a malformed address or
 *    keyspace name; opts->struct_size not set by rpkv_options_init (too
 *    small), an opts->wait not in rpkv_wait, an access key over 64 bytes.
 *  - RPKV_E_UNAVAILABLE: no server there ("... connection refused -- is
 *    kvserver running?"), the server is shutting down or has too many
 *    connections, or it refused the protocol version.
 *  - RPKV_E_PERMISSION: the access key is missing or wrong.
 *  - RPKV_E_NOSPACE: the server had no log segment to grant.
 *  - RPKV_E_TIMEDOUT: no answer within connect_timeout_ms.
 *  - RPKV_E_CORRUPTION, RPKV_E_IO, RPKV_E_BUSY: as reported by the server.
 *  - RPKV_E_NOMEM, RPKV_E_INTERNAL.
 */
RPKV_API int rpkv_connect(const char* server, const char* keyspace,
                          const rpkv_options* opts, rpkv** out);

/*
 * Disconnects (returning the unused tail of the connection's log segment to
 * the server) and frees db. db NULL: does nothing. Never fails: a server
 * that is already gone only makes the disconnect quicker. Must not run
 * concurrently with another call on db; db is invalid afterwards, and so
 * are the messages rpkv_errmsg(db) returned.
 */
RPKV_API void rpkv_close(rpkv* db);

/* ---------------------------------------------------------------------- */
/* reads                                                                   */
/* ---------------------------------------------------------------------- */

/*
 * Reads the value of key[0..key_len). On RPKV_OK, *value points to a copy
 * of the value allocated with malloc() that the caller owns and frees with
 * rpkv_free() (or free()); *value_len is its length. The copy is followed
 * by one NUL byte not counted in *value_len, so a text value may be used
 * as a C string; *value is non-NULL even for an empty value. On any other
 * return *value is NULL and *value_len 0.
 *
 * Returns RPKV_OK, RPKV_NOT_FOUND (the key does not exist), or:
 *  - RPKV_E_INVAL: db, key, value or value_len NULL; key_len not 1..1024.
 *  - RPKV_E_CORRUPTION: the record failed verification after bounded
 *    retries.
 *  - RPKV_E_UNAVAILABLE: the connection is lost (reconnect).
 *  - RPKV_E_TIMEDOUT, RPKV_E_NOMEM, RPKV_E_INTERNAL.
 */
RPKV_API int rpkv_get(rpkv* db, const void* key, size_t key_len, void** value,
                      size_t* value_len);

/*
 * As rpkv_get, and also stores the key's version in *version (non-NULL):
 * the sequence the server assigned when the value was written, to pass to
 * rpkv_put_if_version / rpkv_delete_if_version. Versions of a key only
 * increase and are never 0. On any return other than RPKV_OK *version is
 * 0. Errors as rpkv_get (version NULL: RPKV_E_INVAL).
 */
RPKV_API int rpkv_get_versioned(rpkv* db, const void* key, size_t key_len,
                                void** value, size_t* value_len,
                                uint64_t* version);

/*
 * Whether the key exists, without copying its value out.
 * Returns RPKV_OK (it exists), RPKV_NOT_FOUND (it does not), or an error as
 * rpkv_get (db or key NULL, key_len: RPKV_E_INVAL).
 */
RPKV_API int rpkv_exists(rpkv* db, const void* key, size_t key_len);

/* ---------------------------------------------------------------------- */
/* writes (durable when they return RPKV_OK)                               */
/* ---------------------------------------------------------------------- */

/*
 * Stores value[0..value_len) under key[0..key_len), replacing any previous
 * value; durable on return. value may be NULL when value_len is 0 (an
 * empty value).
 *
 * Returns RPKV_OK, or:
 *  - RPKV_E_INVAL: db or key NULL, value NULL with value_len > 0, key_len
 *    not 1..1024, value_len over rpkv_max_value_size(db) (the message
 *    gives the limit).
 *  - RPKV_E_NOSPACE: the keyspace is full (its log, or the key's index
 *    buckets); deletes still work.
 *  - RPKV_E_UNAVAILABLE: the connection is lost; the put may or may not
 *    have been applied.
 *  - RPKV_E_TIMEDOUT: no acknowledgement within op_timeout_ms; the put may
 *    or may not have been applied.
 *  - RPKV_E_CORRUPTION, RPKV_E_IO, RPKV_E_BUSY: as reported by the server.
 *  - RPKV_E_NOMEM, RPKV_E_INTERNAL.
 */
RPKV_API int rpkv_put(rpkv* db, const void* key, size_t key_len,
                      const void* value, size_t value_len);

/*
 * Deletes the key; durable on return. Deleting a key that does not exist
 * is not an error (RPKV_OK). Errors as rpkv_put (without the value ones).
 */
RPKV_API int rpkv_delete(rpkv* db, const void* key, size_t key_len);

/*
 * Conditional writes: the server checks the condition at commit, under the
 * key's lock, so two clients racing on one key cannot both succeed. When
 * the condition does not hold the call returns RPKV_E_CONDITION_FAILED and
 * nothing changed. `version` (may be NULL) receives the key's new version
 * on RPKV_OK and is set to 0 otherwise. Other errors as rpkv_put.
 */

/* Stores the value only if the key does not exist. */
RPKV_API int rpkv_put_if_absent(rpkv* db, const void* key, size_t key_len,
                                const void* value, size_t value_len,
                                uint64_t* version);

/* Stores the value only if the key exists at expected_version (from
 * rpkv_get_versioned or an earlier write): a compare-and-swap.
 * expected_version 0 is RPKV_E_INVAL (no key has version 0; use
 * rpkv_put_if_absent to require absence). */
RPKV_API int rpkv_put_if_version(rpkv* db, const void* key, size_t key_len,
                                 const void* value, size_t value_len,
                                 uint64_t expected_version, uint64_t* version);

/* Deletes the key only if it exists at expected_version (0: RPKV_E_INVAL).
 * An absent key fails the condition. */
RPKV_API int rpkv_delete_if_version(rpkv* db, const void* key, size_t key_len,
                                    uint64_t expected_version);

/*
 * Atomic read-modify-write (kv::Client::IncrBy / Append): read the value
 * and its version, write the new value only if the key is unchanged, and
 * on a conflict (another writer got there first) read again and retry
 * after a short random pause. After max_conflicts conflicts in a row
 * (kv::ClientOptions::max_conflicts, 100) the call returns RPKV_E_BUSY and
 * changed nothing. Durable on RPKV_OK.
 */
/* Adds delta to the key's value, a signed 64-bit decimal integer ("-12";
 * an absent key counts as 0), and stores *value (may be NULL) = the new
 * value; *value is 0 on any other return. RPKV_E_INVAL also when the value
 * is not such an integer or the sum overflows (nothing written). */
RPKV_API int rpkv_incrby(rpkv* db, const void* key, size_t key_len,
                         int64_t delta, int64_t* value);
/* Appends suffix[0..suffix_len) (NULL when suffix_len is 0) to the value
 * (an absent key counts as empty); *new_len (may be NULL) = the value's new
 * length, 0 on any other return. RPKV_E_INVAL also when the result would
 * exceed rpkv_max_value_size(db). */
RPKV_API int rpkv_append(rpkv* db, const void* key, size_t key_len,
                         const void* suffix, size_t suffix_len,
                         size_t* new_len);
/* ---------------------------------------------------------------------- */
/* expiring keys                                                           */
/* ---------------------------------------------------------------------- */
/*
 * A key may carry an expiry: an absolute time on the server's clock, which
 * the server stamps at commit as its own now + the time to live the writer
 * gave (the writer's clock plays no part). Once it has passed, every read
 * (rpkv_get, rpkv_exists, rpkv_scan, rpkv_ttl) treats the key as absent,
 * and the server's cleaner reclaims its space. Reads are one-sided: they
 * judge the expiry by the connection's estimate of the server's clock,
 * learnt by a small ping the first time a read meets an expiry and again
 * every 10 s while it does; it never returns a value past its expiry and
 * may report a key absent early by at most about one round trip
 * (kv::Client::Ttl in kv/client/client.h gives the bound). A time to live
 * is in milliseconds, 1 .. 100 years (3153600000000); anything else,
 * zero and negative included, is RPKV_E_INVAL with the limits in the
 * message.
 */
/* As rpkv_put, and the key expires ttl_ms milliseconds after the server
 * commits it (Redis SET ... PX). rpkv_put (without a time to live)
 * removes any expiry the key had. Errors as rpkv_put. */
RPKV_API int rpkv_put_ex(rpkv* db, const void* key, size_t key_len,
                         const void* value, size_t value_len, int64_t ttl_ms);
/* Sets the key's time to live (Redis PEXPIRE): rewrites its value with
 * the new expiry, conditional on the version read, retrying conflicts as
 * rpkv_incrby does. Returns RPKV_OK, RPKV_NOT_FOUND (the key does not
 * exist: nothing written), or an error as rpkv_put (RPKV_E_BUSY after
 * max_conflicts conflicts in a row). */
RPKV_API int rpkv_expire(rpkv* db, const void* key, size_t key_len,
                         int64_t ttl_ms);
/* Removes the key's expiry (Redis PERSIST) the same way. *removed (may be
 * NULL) = 1 when an expiry was removed, 0 when the key had none (nothing
 * written) or on any return other than RPKV_OK. Returns RPKV_OK,
 * RPKV_NOT_FOUND (the key does not exist), or an error as rpkv_expire. */
RPKV_API int rpkv_persist(rpkv* db, const void* key, size_t key_len,
                          int* removed);
/* The key's time to live (Redis PTTL): *ttl_ms (non-NULL) = the
 * milliseconds left (>= 1), or -1 when the key exists without an expiry.
 * Returns RPKV_OK, RPKV_NOT_FOUND (*ttl_ms = -2: the key does not exist,
 * or has expired), or an error as rpkv_get (*ttl_ms = -2). */
RPKV_API int rpkv_ttl(rpkv* db, const void* key, size_t key_len,
                      int64_t* ttl_ms);

/* ---------------------------------------------------------------------- */
/* scans                                                                   */
/* ---------------------------------------------------------------------- */
/*
 * Called by rpkv_scan for each key of a page, on the calling thread. key
 * and value are the library's, valid only during the call: copy what you
 * keep. It must not call rpkv functions on the same handle.
 */
typedef void (*rpkv_scan_fn)(void* arg, const void* key, size_t key_len,
                             const void* value, size_t value_len);
/*
 * One page of a cursor scan, as Redis SCAN (kv::Client::ScanPage): from
 * `cursor` (0 starts a scan) examines the keyspace's index in hash order
 * (not sorted) and calls fn for the live keys that start with
 * prefix[0..prefix_len) (prefix_len 0: every key), until about `count`
 * keys were given (0: 100; a page may hold up to 31 more). On RPKV_OK,
 * *next_cursor is the cursor of the next page, 0 when the scan is
 * complete:
 *
 *   uint64_t cursor = 0;
 *   do {
 *     if (rpkv_scan(db, cursor, "user:", 5, 100, fn, arg, &cursor) != 0)
 *       break;  // rpkv_errmsg(db) says why
 *   } while (cursor != 0);
 *
 * The cursor is a position in the index held by the caller (the server
 * keeps no state). A key present from the first page to the last is
 * given at least once unless an update moved its slot across a page
 * boundary meanwhile; a key being updated may be given twice; keys written
 * meanwhile may or may not appear. No snapshot is promised.
 *
 * Returns RPKV_OK, or:
 *  - RPKV_E_INVAL: db, fn or next_cursor NULL; prefix NULL with
 *    prefix_len > 0; a cursor that is not one of this keyspace's.
 *  - errors as rpkv_get.
 * On any return other than RPKV_OK *next_cursor is 0: check the return
 * code, not only the cursor.
 */
RPKV_API int rpkv_scan(rpkv* db, uint64_t cursor, const void* prefix,
                       size_t prefix_len, size_t count, rpkv_scan_fn fn,
                       void* arg, uint64_t* next_cursor);
/* ---------------------------------------------------------------------- */
/* memory, messages, information                                           */
/* ---------------------------------------------------------------------- */

/* Frees a value returned by rpkv_get / rpkv_get_versioned. p NULL: does
 * nothing. Same as free(p); provided so that programs need not assume the
 * library and the program share one allocator. */
RPKV_API void rpkv_free(void* p);

/*
 * The message of the calling thread's most recent call on db that did not
 * return RPKV_OK ("" if there was none); db NULL: of the calling thread's
 * most recent failed rpkv_connect or call given a NULL handle. Never
 * returns NULL. The text is owned by the library and stays valid until the
 * calling thread's next call on the same handle that does not return
 * RPKV_OK, or rpkv_close(db) (for NULL: the thread's next failed connect
 * or NULL-handle call, or the thread's exit). Copy it to keep it.
 */
RPKV_API const char* rpkv_errmsg(const rpkv* db);

/* A static, short English name for a return code ("ok", "not found",
 * "invalid argument", ...; "unknown error" for a value not listed above).
 * Thread-safe; never NULL. */
RPKV_API const char* rpkv_strerror(int rc);

/* The largest value (bytes) this keyspace takes; 0 when db is NULL. */
RPKV_API uint32_t rpkv_max_value_size(const rpkv* db);

/* The library's version, "MAJOR.MINOR.PATCH" (static). */
RPKV_API const char* rpkv_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RPKV_RPKV_H */
