/* The external design's interface (Floem paper, Figure 1d): a request handed to the
 * external program by obtain_pkt() and answered through get_send(), set_send() or
 * delete_send() (by its opcode; a SET too large is answered with delete_send()).
 *
 * For a GET or GETK the program puts the record it found (flags, expiry, value; see
 * proto.h) into `record` and its length into `reclen` (0: no such key); for a SET it
 * stores `record` and sets `status` (FLOEM_MC_OK, or FLOEM_MC_OUT_OF_MEMORY); for a
 * DELETE it sets `status` (FLOEM_MC_OK, or FLOEM_MC_KEY_NOT_FOUND). A SET whose value
 * is too large comes as a DELETE-like task with status FLOEM_MC_VALUE_TOO_LARGE
 * already set: remove the key and keep the status. `reply` says where the answer
 * goes; the program leaves it alone.
 */
#ifndef KVS_TASK_H
#define KVS_TASK_H

#include <stdint.h>

#include "proto.h"

struct kvs_task {
    uint8_t opcode;                 /* FLOEM_MC_GET, _GETK, _SET or _DELETE */
    uint16_t status;
    uint16_t keylen;
    uint32_t hash;                  /* of the key, computed on the NIC (kvs_hash) */
    uint32_t reclen;
    uint8_t key[KVS_KEY_MAX];
    uint8_t record[KVS_RECORD_HEADER + KVS_VALUE_LIMIT];
    struct {
        struct kvs_packet *pkt;
        void *buf;
        int qid;
        uint32_t now;               /* when the NIC received the request (kvs_now) */
    } reply;
};

#endif
