/* SPDX-License-Identifier: MIT */
/*
 * Sealed messages between ranks: AES-256-GCM (OpenSSL's EVP interface,
 * AES-NI and carry-less multiply: no secret-dependent branch or address)
 * with per-direction keys from HKDF-SHA256. See msg.h and docs/mpi.md.
 */
#include "mpi/msg.h"

#include <string.h>

#include <openssl/evp.h>
#include <openssl/kdf.h>

static void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}
static void put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}
static uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* HKDF-SHA256(secret, salt "obl-mpi v1", info) into out. 0 on success. */
static int hkdf(const unsigned char *secret, size_t slen, const unsigned char *info, size_t ilen,
                unsigned char *out, size_t len)
{
    static const unsigned char salt[] = "obl-mpi v1";
    EVP_PKEY_CTX *k = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    int ok = k && EVP_PKEY_derive_init(k) > 0 && EVP_PKEY_CTX_set_hkdf_md(k, EVP_sha256()) > 0 &&
             EVP_PKEY_CTX_set1_hkdf_salt(k, salt, (int)sizeof salt - 1) > 0 &&
             EVP_PKEY_CTX_set1_hkdf_key(k, secret, (int)slen) > 0 &&
             EVP_PKEY_CTX_add1_hkdf_info(k, info, (int)ilen) > 0 &&
             EVP_PKEY_derive(k, out, &len) > 0;
    EVP_PKEY_CTX_free(k);
    return ok ? 0 : -1;
}

/* see msg.h */
int msg_pair_key(const unsigned char *secret, size_t len, uint32_t src, uint32_t dst,
                 unsigned char key[32])
{
    unsigned char info[12] = {'p', 'a', 'i', 'r'};
    put32(info + 4, src);
    put32(info + 8, dst);
    return hkdf(secret, len, info, sizeof info, key, 32);
}

/* see msg.h */
int msg_derive(const unsigned char *secret, size_t slen, const char *label, unsigned char *out,
               size_t len)
{
    return hkdf(secret, slen, (const unsigned char *)label, strlen(label), out, len);
}

static EVP_CIPHER_CTX *keyed(const unsigned char key[32], int enc)
{
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    if (x && EVP_CipherInit_ex(x, EVP_aes_256_gcm(), NULL, key, NULL, enc) > 0)
        return x;
    EVP_CIPHER_CTX_free(x);
    return NULL;
}

/* see msg.h */
obl_err msg_chan_init(msg_chan *c, uint32_t self, uint32_t peer, const unsigned char ksend[32],
                      const unsigned char krecv[32])
{
    memset(c, 0, sizeof *c);
    c->self = self;
    c->peer = peer;
    c->enc = keyed(ksend, 1);
    c->dec = keyed(krecv, 0);
    if (!c->enc || !c->dec) {
        msg_chan_free(c);
        return OBL_ERR_IO;
    }
    return OBL_OK;
}

/* see msg.h */
void msg_chan_free(msg_chan *c)
{
    EVP_CIPHER_CTX_free((EVP_CIPHER_CTX *)c->enc);
    EVP_CIPHER_CTX_free((EVP_CIPHER_CTX *)c->dec);
    c->enc = c->dec = NULL;
}

/* The nonce: sender and sequence number (unique per direction key). */
static void nonce(unsigned char iv[12], uint32_t src, uint64_t seq)
{
    put32(iv, src);
    put64(iv + 4, seq);
}

/* see msg.h */
obl_err msg_seal(msg_chan *c, uint32_t kind, uint64_t epoch, const void *pt, size_t len,
                 unsigned char *out)
{
    EVP_CIPHER_CTX *x = (EVP_CIPHER_CTX *)c->enc;
    unsigned char iv[12];
    int n = 0, ok = len <= (size_t)1 << 30;
    put32(out, MPI_MSG_MAGIC);
    put32(out + 4, kind);
    put64(out + 8, epoch);
    put64(out + 16, c->seq_send);
    put32(out + 24, c->self);
    put32(out + 28, c->peer);
    put64(out + 32, len);
    nonce(iv, c->self, c->seq_send);
    ok = ok && EVP_EncryptInit_ex(x, NULL, NULL, NULL, iv) > 0 &&
         EVP_EncryptUpdate(x, NULL, &n, out, MPI_MSG_HDR) > 0 &&
         (len == 0 ||
          EVP_EncryptUpdate(x, out + MPI_MSG_HDR, &n, (const unsigned char *)pt, (int)len) > 0) &&
         EVP_EncryptFinal_ex(x, out + MPI_MSG_HDR + len, &n) > 0 &&
         EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, MPI_MSG_TAG, out + MPI_MSG_HDR + len) > 0;
    if (!ok)
        return OBL_ERR_IO;
    c->seq_send++;
    return OBL_OK;
}

/* Decrypts and authenticates; 1 if the tag matches. */
static int aead_open(msg_chan *c, const unsigned char *in, size_t len, unsigned char *pt)
{
    EVP_CIPHER_CTX *x = (EVP_CIPHER_CTX *)c->dec;
    unsigned char iv[12], tag[MPI_MSG_TAG];
    int n = 0;
    memcpy(tag, in + MPI_MSG_HDR + len, MPI_MSG_TAG);
    nonce(iv, get32(in + 24), get64(in + 16));
    return EVP_DecryptInit_ex(x, NULL, NULL, NULL, iv) > 0 &&
           EVP_DecryptUpdate(x, NULL, &n, in, MPI_MSG_HDR) > 0 &&
           (len == 0 || EVP_DecryptUpdate(x, pt, &n, in + MPI_MSG_HDR, (int)len) > 0) &&
           EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, MPI_MSG_TAG, tag) > 0 &&
           EVP_DecryptFinal_ex(x, pt + len, &n) > 0;
}

/* see msg.h */
int msg_open(msg_chan *c, uint64_t epoch, const size_t exp_len[MSG_KINDS], const unsigned char *in,
             size_t n, void *pt, uint32_t *kind)
{
    if (n < MPI_MSG_HDR + MPI_MSG_TAG)
        return MSG_TRUNCATED;
    uint64_t len = get64(in + 32);
    if (len != n - MPI_MSG_HDR - MPI_MSG_TAG)
        return MSG_TRUNCATED;
    uint32_t k = get32(in + 4);
    /* the payload length must be public for the kind before anything is written */
    if (k >= MSG_KINDS || exp_len[k] != len) /* not authenticated: no key for it */
        return MSG_HEADER;
    if (!aead_open(c, in, (size_t)len, (unsigned char *)pt)) {
        memset(pt, 0, (size_t)len);
        return MSG_TAMPERED;
    }
    if (get32(in) != MPI_MSG_MAGIC || get32(in + 24) != c->peer || get32(in + 28) != c->self)
        return MSG_HEADER;
    uint64_t seq = get64(in + 16);
    if (seq < c->seq_recv)
        return MSG_REPLAYED;
    if (seq > c->seq_recv)
        return MSG_REORDERED;
    if (get64(in + 8) != epoch)
        return MSG_EPOCH;
    c->seq_recv++;
    *kind = k;
    return MSG_OK;
}

/* see msg.h */
const char *msg_fault_name(int fault)
{
    static const char *const names[] = {"ok",
                                        "tampered (authentication failed)",
                                        "replayed (old sequence number)",
                                        "reordered (sequence number ahead)",
                                        "truncated (wrong length)",
                                        "from another epoch",
                                        "bad header (sender, receiver, kind or size)"};
    return fault >= 0 && fault <= MSG_HEADER ? names[fault] : "unknown";
}
