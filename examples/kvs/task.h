/* The external design's interface (Floem paper, Figure 1d): a request handed to the
 * external program by obtain_pkt() and answered through get_send(), set_send(),
 * delete_send() or update_send(), by its kind (proto.h's enum kvs_op in `opcode`: a GET,
 * a plain SET, a plain DELETE or a SET too large, anything else).
 *
 * Records of a CAS value below `oldest` are dead to a task (flush_all). For a GET the program puts the record it found (flags, expiry, CAS value,
 * value; see proto.h) into `record` and its length into `reclen` (0: no such key); for a
 * SET it stores `record` (whose CAS value is `cas`) and sets `status` (FLOEM_MC_OK, or
 * FLOEM_MC_OUT_OF_MEMORY); for a DELETE it sets `status` (FLOEM_MC_OK, or
 * FLOEM_MC_KEY_NOT_FOUND). A SET whose value is too large comes as a DELETE-like task with
 * status FLOEM_MC_VALUE_TOO_LARGE already set: remove the key and keep the status. Any
 * other task is an update (update.h's kvs_store_apply, with `arg` and `cas`): the program
 * puts the record the key holds after it into `record` and `reclen`, and its answer into
 * `status`. `reply` says where the answer goes; the program leaves it alone.
 */
#ifndef KVS_TASK_H
#define KVS_TASK_H

#include <stdint.h>

#include "proto.h"

struct kvs_task {
    uint8_t opcode;                 /* enum kvs_op */
    uint16_t status;
    uint64_t cas;                   /* the CAS value of what it stores */
    uint64_t arg;                   /* an update's argument (proto.h's kvs_request) */
    uint64_t oldest;                /* the oldest live CAS value */
    uint16_t keylen;
    uint32_t hash;                  /* of the key, computed on the NIC (kvs_hash) */
    uint32_t reclen;
    uint8_t key[KVS_KEY_MAX];
    uint8_t record[KVS_RECORD_MAX];
    struct {
        struct kvs_packet *pkt;
        void *buf;
        int qid;
        uint32_t now;               /* when the NIC received the request (kvs_now) */
        uint8_t part;               /* kvs_split_flags of a get's key */
    } reply;
};

#endif
