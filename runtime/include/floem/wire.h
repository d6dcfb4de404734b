/* Byte order of values crossing host <-> NIC.
 *
 * The wire order is the host's (little-endian). floem_wire(v) converts a
 * scalar between NIC order and wire order (the same operation both ways); on
 * a little-endian NIC it is the identity and costs nothing.
 */
#ifndef FLOEM_WIRE_H
#define FLOEM_WIRE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "floem/dma.h"

static inline float floem_wire_float(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits = floem_wire32(bits);
    memcpy(&v, &bits, sizeof v);
    return v;
}

static inline double floem_wire_double(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits = floem_wire64(bits);
    memcpy(&v, &bits, sizeof v);
    return v;
}

#define FLOEM_WIRE_INT(T, v) \
    ((T)(sizeof(T) == 1 ? (uint8_t)(v) : sizeof(T) == 2 ? floem_wire16((uint16_t)(v)) \
        : sizeof(T) == 4 ? floem_wire32((uint32_t)(v)) : floem_wire64((uint64_t)(v))))

/* `v` converted between NIC and wire byte order (scalars; pointers are not converted). */
#define floem_wire(v) _Generic((v), \
    _Bool: (v), char: (v), signed char: (v), unsigned char: (v), \
    short: FLOEM_WIRE_INT(short, v), unsigned short: FLOEM_WIRE_INT(unsigned short, v), \
    int: FLOEM_WIRE_INT(int, v), unsigned: FLOEM_WIRE_INT(unsigned, v), \
    long: FLOEM_WIRE_INT(long, v), unsigned long: FLOEM_WIRE_INT(unsigned long, v), \
    long long: FLOEM_WIRE_INT(long long, v), \
    unsigned long long: FLOEM_WIRE_INT(unsigned long long, v), \
    float: floem_wire_float(v), double: floem_wire_double(v), default: (v))

#endif
