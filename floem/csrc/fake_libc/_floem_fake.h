/* Fake C library for reading element bodies with pycparser; never compiled.
 *
 * Every header in this directory includes this file only: the types, and the
 * macros that must expand to something pycparser reads, of the standard C,
 * POSIX, pthread and GCC names that element bodies may use. Functions and
 * enum constants need no declaration: pycparser does not check names.
 */
#ifndef _FLOEM_FAKE_H
#define _FLOEM_FAKE_H

/* GCC extensions pycparser does not read. */
#define __attribute__(x)
#define __attribute(x)
#define __declspec(x)
#define __extension__
#define __inline inline
#define __inline__ inline
#define __forceinline inline
#define __restrict restrict
#define __restrict__ restrict
#define __volatile volatile
#define __volatile__ volatile
#define __const const
#define __const__ const
#define __signed signed
#define __signed__ signed
#define __thread _Thread_local
#define thread_local _Thread_local
#define __asm__(...)
#define __asm(...)
#define asm(...)
#define __alignof__ _Alignof
#define __alignof _Alignof
#define alignof _Alignof
#define alignas _Alignas
#define static_assert _Static_assert
#define noreturn _Noreturn
#define __builtin_offsetof(type, member) offsetof(type, member)
#define __builtin_va_arg(ap, type) (*(type *)(ap))
#define va_arg(ap, type) (*(type *)(ap))
#define __builtin_types_compatible_p(a, b) 0
#define __builtin_choose_expr(c, a, b) (a)

/* Sizes, pointers, characters. */
typedef unsigned long size_t;
typedef long ssize_t;
typedef long ptrdiff_t;
typedef int wchar_t;
typedef unsigned int wint_t;
typedef unsigned short char16_t;
typedef unsigned int char32_t;
typedef long double max_align_t;
typedef __int128 __int128_t;
typedef unsigned __int128 __uint128_t;
typedef char *__builtin_va_list;
typedef __builtin_va_list va_list;
typedef __builtin_va_list __gnuc_va_list;

/* <stdint.h> */
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef signed char int_least8_t;
typedef short int_least16_t;
typedef int int_least32_t;
typedef long int_least64_t;
typedef unsigned char uint_least8_t;
typedef unsigned short uint_least16_t;
typedef unsigned int uint_least32_t;
typedef unsigned long uint_least64_t;
typedef signed char int_fast8_t;
typedef long int_fast16_t;
typedef long int_fast32_t;
typedef long int_fast64_t;
typedef unsigned char uint_fast8_t;
typedef unsigned long uint_fast16_t;
typedef unsigned long uint_fast32_t;
typedef unsigned long uint_fast64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
typedef long intmax_t;
typedef unsigned long uintmax_t;
typedef unsigned char u_int8_t;
typedef unsigned short u_int16_t;
typedef unsigned int u_int32_t;
typedef unsigned long u_int64_t;
typedef unsigned char u_char;
typedef unsigned short u_short;
typedef unsigned int u_int;
typedef unsigned long u_long;
typedef _Bool bool;

/* <stdio.h>, <stdlib.h>, <setjmp.h>, <signal.h>, <locale.h>, <wchar.h> */
typedef struct _IO_FILE FILE;
typedef struct { long __pos; } fpos_t;
typedef struct { int quot; int rem; } div_t;
typedef struct { long quot; long rem; } ldiv_t;
typedef struct { long long quot; long long rem; } lldiv_t;
typedef long jmp_buf[8];
typedef long sigjmp_buf[8];
typedef int sig_atomic_t;
typedef struct { unsigned long __val[16]; } sigset_t;
typedef struct __locale_struct *locale_t;
typedef struct { int __count; unsigned int __value; } mbstate_t;
typedef unsigned long wctype_t;

/* <sys/types.h>, <time.h> */
typedef long off_t;
typedef long off64_t;
typedef long loff_t;
typedef int pid_t;
typedef unsigned int uid_t;
typedef unsigned int gid_t;
typedef unsigned int id_t;
typedef unsigned int mode_t;
typedef unsigned long dev_t;
typedef unsigned long ino_t;
typedef unsigned long nlink_t;
typedef long blksize_t;
typedef long blkcnt_t;
typedef unsigned long fsblkcnt_t;
typedef unsigned long fsfilcnt_t;
typedef int key_t;
typedef char *caddr_t;
typedef long time_t;
typedef long suseconds_t;
typedef unsigned int useconds_t;
typedef long clock_t;
typedef int clockid_t;
typedef void *timer_t;

/* <pthread.h>, <semaphore.h>, <sched.h>, <threads.h> */
typedef unsigned long pthread_t;
typedef union { char __size[56]; long __align; } pthread_attr_t;
typedef union { char __size[40]; long __align; } pthread_mutex_t;
typedef union { char __size[4]; int __align; } pthread_mutexattr_t;
typedef union { char __size[48]; long long __align; } pthread_cond_t;
typedef union { char __size[4]; int __align; } pthread_condattr_t;
typedef union { char __size[56]; long __align; } pthread_rwlock_t;
typedef union { char __size[8]; long __align; } pthread_rwlockattr_t;
typedef union { char __size[32]; long __align; } pthread_barrier_t;
typedef union { char __size[4]; int __align; } pthread_barrierattr_t;
typedef volatile int pthread_spinlock_t;
typedef unsigned int pthread_key_t;
typedef int pthread_once_t;
typedef union { char __size[32]; long __align; } sem_t;
typedef struct { unsigned long __bits[16]; } cpu_set_t;
typedef unsigned long thrd_t;
typedef pthread_mutex_t mtx_t;
typedef pthread_cond_t cnd_t;
#define PTHREAD_MUTEX_INITIALIZER { { 0 } }
#define PTHREAD_COND_INITIALIZER { { 0 } }
#define PTHREAD_RWLOCK_INITIALIZER { { 0 } }
#define PTHREAD_ONCE_INIT 0

/* <sys/socket.h>, <netinet/in.h>, <poll.h> */
typedef unsigned int socklen_t;
typedef unsigned short sa_family_t;
typedef uint32_t in_addr_t;
typedef uint16_t in_port_t;
typedef unsigned long nfds_t;

/* <stdatomic.h> */
typedef _Atomic _Bool atomic_bool;
typedef _Atomic char atomic_char;
typedef _Atomic signed char atomic_schar;
typedef _Atomic unsigned char atomic_uchar;
typedef _Atomic short atomic_short;
typedef _Atomic unsigned short atomic_ushort;
typedef _Atomic int atomic_int;
typedef _Atomic unsigned int atomic_uint;
typedef _Atomic long atomic_long;
typedef _Atomic unsigned long atomic_ulong;
typedef _Atomic long long atomic_llong;
typedef _Atomic unsigned long long atomic_ullong;
typedef _Atomic size_t atomic_size_t;
typedef _Atomic ptrdiff_t atomic_ptrdiff_t;
typedef _Atomic intptr_t atomic_intptr_t;
typedef _Atomic uintptr_t atomic_uintptr_t;
typedef _Atomic int8_t atomic_int8_t;
typedef _Atomic int16_t atomic_int16_t;
typedef _Atomic int32_t atomic_int32_t;
typedef _Atomic int64_t atomic_int64_t;
typedef _Atomic uint8_t atomic_uint8_t;
typedef _Atomic uint16_t atomic_uint16_t;
typedef _Atomic uint32_t atomic_uint32_t;
typedef _Atomic uint64_t atomic_uint64_t;
typedef struct { _Atomic _Bool __val; } atomic_flag;
typedef enum { memory_order_relaxed, memory_order_consume, memory_order_acquire,
               memory_order_release, memory_order_acq_rel, memory_order_seq_cst } memory_order;
#define ATOMIC_VAR_INIT(value) (value)
#define ATOMIC_FLAG_INIT { 0 }

/* x86 vector types of the intrinsics headers. */
typedef struct { long long __v[2]; } __m128i;
typedef struct { double __v[2]; } __m128d;
typedef struct { float __v[4]; } __m128;
typedef struct { long long __v[4]; } __m256i;
typedef struct { double __v[4]; } __m256d;
typedef struct { float __v[8]; } __m256;

/* Constants. */
#define NULL ((void *)0)
#define true 1
#define false 0
#define __bool_true_false_are_defined 1
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 2147483647
#define EOF (-1)
#define BUFSIZ 8192
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX
#define SHRT_MIN (-32768)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-INT_MAX - 1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295U
#define LONG_MIN (-LONG_MAX - 1L)
#define LONG_MAX 9223372036854775807L
#define ULONG_MAX 18446744073709551615UL
#define LLONG_MIN (-LLONG_MAX - 1LL)
#define LLONG_MAX 9223372036854775807LL
#define ULLONG_MAX 18446744073709551615ULL
#define INT8_MIN (-128)
#define INT16_MIN (-32768)
#define INT32_MIN (-INT32_MAX - 1)
#define INT64_MIN (-INT64_MAX - 1)
#define INT8_MAX 127
#define INT16_MAX 32767
#define INT32_MAX 2147483647
#define INT64_MAX 9223372036854775807L
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295U
#define UINT64_MAX 18446744073709551615UL
#define INTPTR_MIN INT64_MIN
#define INTPTR_MAX INT64_MAX
#define UINTPTR_MAX UINT64_MAX
#define INTMAX_MIN INT64_MIN
#define INTMAX_MAX INT64_MAX
#define UINTMAX_MAX UINT64_MAX
#define PTRDIFF_MIN INT64_MIN
#define PTRDIFF_MAX INT64_MAX
#define SIZE_MAX UINT64_MAX
#define SSIZE_MAX INT64_MAX
#define INT8_C(c) c
#define INT16_C(c) c
#define INT32_C(c) c
#define INT64_C(c) c ## L
#define UINT8_C(c) c
#define UINT16_C(c) c
#define UINT32_C(c) c ## U
#define UINT64_C(c) c ## UL
#define INTMAX_C(c) c ## L
#define UINTMAX_C(c) c ## UL

/* <inttypes.h> format strings, so that "%" PRIu64 is one string literal. */
#define PRId8 "d"
#define PRId16 "d"
#define PRId32 "d"
#define PRId64 "ld"
#define PRIi8 "i"
#define PRIi16 "i"
#define PRIi32 "i"
#define PRIi64 "li"
#define PRIo8 "o"
#define PRIo16 "o"
#define PRIo32 "o"
#define PRIo64 "lo"
#define PRIu8 "u"
#define PRIu16 "u"
#define PRIu32 "u"
#define PRIu64 "lu"
#define PRIx8 "x"
#define PRIx16 "x"
#define PRIx32 "x"
#define PRIx64 "lx"
#define PRIX8 "X"
#define PRIX16 "X"
#define PRIX32 "X"
#define PRIX64 "lX"
#define PRIdMAX "ld"
#define PRIiMAX "li"
#define PRIuMAX "lu"
#define PRIxMAX "lx"
#define PRIdPTR "ld"
#define PRIuPTR "lu"
#define PRIxPTR "lx"
#define SCNd8 "hhd"
#define SCNd16 "hd"
#define SCNd32 "d"
#define SCNd64 "ld"
#define SCNi32 "i"
#define SCNi64 "li"
#define SCNu8 "hhu"
#define SCNu16 "hu"
#define SCNu32 "u"
#define SCNu64 "lu"
#define SCNx8 "hhx"
#define SCNx16 "hx"
#define SCNx32 "x"
#define SCNx64 "lx"
#define SCNdMAX "ld"
#define SCNuMAX "lu"

#endif
