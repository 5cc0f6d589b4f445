#!/usr/bin/env python3
"""Write a tiny random-weight llama-architecture GGUF for protocol tests.

The model is a few hundred kilobytes: two layers, 64-wide, with a byte-level
BPE vocabulary (one token per byte, GPT-2 byte mapping) so that any text,
and in particular any JSON, can be tokenized and generated. Its answers are
nonsense, but grammar-constrained decoding still makes them schema-valid,
which is all kitsoki's endpoint-mode tests need from a real llama-server.

usage: tiny-gguf.py OUT.gguf [--seed N]
"""
import argparse

import numpy as np
import gguf


def byte_tokens():
    """The GPT-2 byte-to-unicode table: one printable symbol per byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)

    n_embd, n_head, n_layer, n_ff, n_ctx = 64, 4, 2, 128, 4096
    tokens = byte_tokens() + ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    types = [gguf.TokenType.NORMAL] * 256 + [gguf.TokenType.CONTROL] * 3
    eos, im_start, im_end = 256, 257, 258
    n_vocab = len(tokens)

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name("kitsoki-tiny-random")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    # One harmless merge: the list must exist for a gpt2 tokenizer.
    w.add_token_merges([tokens[ord("a")] + " " + tokens[ord("b")]])
    w.add_bos_token_id(eos)
    w.add_eos_token_id(im_end)
    w.add_add_bos_token(False)
    w.add_chat_template(
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )

    def t(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    # numpy shapes are the reverse of ggml's ne: (rows, cols) = (ne1, ne0).
    w.add_tensor("token_embd.weight", t(n_vocab, n_embd))
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor("output.weight", t(n_vocab, n_embd))
    for i in range(n_layer):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(p + name + ".weight", t(n_embd, n_embd))
        w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", t(n_ff, n_embd))
        w.add_tensor(p + "ffn_up.weight", t(n_ff, n_embd))
        w.add_tensor(p + "ffn_down.weight", t(n_embd, n_ff))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
