/* Memcached binary protocol over UDP: parsing and building (see memcached.h). */
#include "memcached.h"

#include <string.h>

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

enum floem_mc_verdict floem_mc_parse(const void *data, size_t len, struct floem_mc_msg *msg)
{
    const uint8_t *p = (const uint8_t *)data;
    if (p == NULL || len < FLOEM_MC_UDP_HDR_LEN + FLOEM_MC_HDR_LEN)
        return FLOEM_MC_TRUNCATED;
    const uint8_t *h = p + FLOEM_MC_UDP_HDR_LEN;
    if (h[0] != FLOEM_MC_REQUEST && h[0] != FLOEM_MC_RESPONSE)
        return FLOEM_MC_BAD_MAGIC;
    uint16_t key_len = get16(h + 2);
    uint8_t extras_len = h[4];
    uint32_t body_len = get32(h + 8);
    if ((uint32_t)extras_len + key_len > body_len)
        return FLOEM_MC_BAD_LENGTHS;
    if (body_len > len - FLOEM_MC_UDP_HDR_LEN - FLOEM_MC_HDR_LEN)
        return FLOEM_MC_BODY_TRUNCATED;
    msg->request_id = get16(p);
    msg->sequence = get16(p + 2);
    msg->total = get16(p + 4);
    msg->magic = h[0];
    msg->opcode = h[1];
    msg->data_type = h[5];
    msg->status = get16(h + 6);
    msg->opaque = get32(h + 12);
    msg->cas = (uint64_t)get32(h + 16) << 32 | get32(h + 20);
    msg->extras = h + FLOEM_MC_HDR_LEN;
    msg->extras_len = extras_len;
    msg->key = msg->extras + extras_len;
    msg->key_len = key_len;
    msg->value = msg->key + key_len;
    msg->value_len = body_len - extras_len - key_len;
    return FLOEM_MC_PARSED;
}

size_t floem_mc_build(void *out, size_t cap, const struct floem_mc_msg *msg)
{
    uint8_t *p = (uint8_t *)out;
    uint64_t body = (uint64_t)msg->extras_len + msg->key_len + msg->value_len;
    if (body > UINT32_MAX || cap < FLOEM_MC_UDP_HDR_LEN + FLOEM_MC_HDR_LEN ||
        body > cap - FLOEM_MC_UDP_HDR_LEN - FLOEM_MC_HDR_LEN)
        return 0;
    put16(p, msg->request_id);
    put16(p + 2, msg->sequence);
    put16(p + 4, msg->total);
    put16(p + 6, 0);
    uint8_t *h = p + FLOEM_MC_UDP_HDR_LEN;
    h[0] = msg->magic;
    h[1] = msg->opcode;
    put16(h + 2, msg->key_len);
    h[4] = msg->extras_len;
    h[5] = msg->data_type;
    put16(h + 6, msg->status);
    put32(h + 8, (uint32_t)body);
    put32(h + 12, msg->opaque);
    put32(h + 16, (uint32_t)(msg->cas >> 32));
    put32(h + 20, (uint32_t)msg->cas);
    uint8_t *at = h + FLOEM_MC_HDR_LEN;
    if (msg->extras_len)
        memcpy(at, msg->extras, msg->extras_len);
    at += msg->extras_len;
    if (msg->key_len)
        memcpy(at, msg->key, msg->key_len);
    at += msg->key_len;
    if (msg->value_len)
        memcpy(at, msg->value, msg->value_len);
    return FLOEM_MC_UDP_HDR_LEN + FLOEM_MC_HDR_LEN + (size_t)body;
}
