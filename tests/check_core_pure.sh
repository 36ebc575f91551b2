#!/usr/bin/env bash
# Fails if the protocol core (the static library given) calls anything that
# does I/O, reads a clock, makes threads, draws randomness or allocates by
# itself: the core takes packets, time, randomness and memory from its
# caller.  Checks the undefined symbols of the compiled objects against an
# allow list, so a call hidden behind a macro is caught too.
set -euo pipefail
lib=${1:?usage: check_core_pure.sh librn_core.a [ON|OFF]}
# ON: a build with RN_ASSERT (src/core/rn_assert.h), whose failed invariants
# abort through glibc's __assert_fail; a release build (OFF) may not call it.
asserts=${2:-OFF}

# What the core may use: memory and string helpers, libsodium's SipHash, keyed
# BLAKE2b, constant-time compare and zeroing (pure functions), sanitizer/compiler runtime hooks;
# OpenSSL's EVP AEAD and HKDF (rn_crypt.c: its contexts are made when a connection's keys are
# derived and when an epoch begins, never per datagram); Intel's ipsec-mb, whose manager
# (allocated) is made once per process to find the CPU's GCM functions and freed at once.
allow='^(alloc_mb_mgr|init_mb_mgr_auto|free_mb_mgr|memcpy|memmove|memset|memcmp|strlen|crypto_shorthash_siphashx24|crypto_generichash_blake2b|crypto_generichash_blake2b_init|crypto_generichash_blake2b_update|crypto_generichash_blake2b_final|crypto_generichash_blake2b_salt_personal|sodium_memcmp|sodium_memzero|EVP_CIPHER_CTX_new|EVP_CIPHER_CTX_free|EVP_CIPHER_CTX_get0_cipher|EVP_CipherInit_ex|EVP_aes_128_gcm|EVP_aes_256_gcm|EVP_EncryptInit_ex2|EVP_EncryptUpdate|EVP_EncryptFinal_ex|EVP_DecryptInit_ex2|EVP_CIPHER_CTX_get_params|EVP_CIPHER_CTX_set_params|EVP_DecryptUpdate|EVP_DecryptFinal_ex|EVP_KDF_fetch|EVP_KDF_free|EVP_KDF_CTX_new|EVP_KDF_CTX_free|EVP_KDF_derive|OSSL_PARAM_construct_.*|__stack_chk_fail|__asan_.*|__ubsan_.*|__tsan_.*|__sanitizer_.*|__sancov_.*|__llvm_.*|__afl_.*|_GLOBAL_OFFSET_TABLE_)$'

[ "$asserts" = ON ] && allow="${allow%)\$}|__assert_fail)\$"
bad=$(nm -u "$lib" | awk 'NF==2 && $1=="U" {print $2}' | sort -u | grep -Ev "$allow" || true)
# symbols defined inside the library itself are fine
defined=$(nm --defined-only "$lib" | awk 'NF==3 {print $3}' | sort -u)
bad=$(comm -23 <(printf '%s\n' $bad | sort -u) <(printf '%s\n' $defined) | sed '/^$/d' || true)
if [ -n "$bad" ]; then
	echo "src/core calls functions outside its allow list (it must stay sans-I/O):"
	printf '  %s\n' $bad
	exit 1
fi
echo "src/core is pure: no I/O, clock, thread, randomness or allocation calls"
