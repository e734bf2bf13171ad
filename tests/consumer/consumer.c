/* consumer_c SERVER: the C API from a program outside the rpkv tree.
 * Connects to keyspace "default" on SERVER (HOST:PORT), puts, gets,
 * deletes, checks not-found and the error messages. Exit 0 when all
 * checks hold; otherwise prints the first failure and exits 1. */
#include <rpkv/rpkv.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "consumer_c: %s:%d: check failed: %s\n", __FILE__, \
              __LINE__, #cond);                                          \
      failures++;                                                        \
    }                                                                    \
  } while (0)

int main(int argc, char** argv) {
  const char* server = argc > 1 ? argv[1] : "127.0.0.1:7400";
  const char key[] = "consumer-c-key";
  const char value[] = "hello\0from C"; /* a NUL byte inside */
  const size_t value_len = sizeof(value) - 1;
  rpkv_options opts;
  rpkv* db = NULL;
  void* got = NULL;
  size_t got_len = 0;
  int rc;

  rpkv_options_init(&opts);
  opts.op_timeout_ms = 5000;
  rc = rpkv_connect(server, "default", &opts, &db);
  if (rc != RPKV_OK) {
    fprintf(stderr, "consumer_c: connect to %s: %s (%s)\n", server,
            rpkv_errmsg(NULL), rpkv_strerror(rc));
    return 1;
  }

  CHECK(rpkv_put(db, key, strlen(key), value, value_len) == RPKV_OK);
  CHECK(rpkv_get(db, key, strlen(key), &got, &got_len) == RPKV_OK);
  CHECK(got != NULL && got_len == value_len &&
        memcmp(got, value, value_len) == 0);
  rpkv_free(got);
  got = NULL;

  CHECK(rpkv_exists(db, key, strlen(key)) == RPKV_OK);
  CHECK(rpkv_delete(db, key, strlen(key)) == RPKV_OK);

  rc = rpkv_get(db, key, strlen(key), &got, &got_len);
  CHECK(rc == RPKV_NOT_FOUND);
  CHECK(got == NULL && got_len == 0);
  CHECK(rpkv_exists(db, key, strlen(key)) == RPKV_NOT_FOUND);

  /* An error leaves a message on the handle, for this thread. */
  rc = rpkv_put(db, NULL, 0, value, value_len);
  CHECK(rc == RPKV_E_INVAL);
  CHECK(strstr(rpkv_errmsg(db), "key is NULL") != NULL);
  /* The handle still works after an error. */
  CHECK(rpkv_put(db, key, strlen(key), "v2", 2) == RPKV_OK);
  CHECK(rpkv_delete(db, key, strlen(key)) == RPKV_OK);
  rpkv_close(db);

  /* A keyspace that does not exist: RPKV_NOT_FOUND, no handle, and the
   * reason in rpkv_errmsg(NULL). */
  db = (rpkv*)&opts; /* garbage: must come back NULL */
  rc = rpkv_connect(server, "consumer-no-such-keyspace", NULL, &db);
  CHECK(rc == RPKV_NOT_FOUND);
  CHECK(db == NULL);
  CHECK(strstr(rpkv_errmsg(NULL), "consumer-no-such-keyspace") != NULL);
  rpkv_close(NULL);

  if (failures != 0) return 1;
  printf("consumer_c: ok (librpkv %s)\n", rpkv_version());
  return 0;
}
