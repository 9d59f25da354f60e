"""Write a tiny random llama-architecture GGUF (numpy + gguf + tokenizers). Usage: make_gguf.py OUT.gguf

Hidden channel 0 is a constant 1.0 that the layers neither read (norm weight 0) nor write (zero
output rows); the output head weighs it -100 for unwanted tokens, so their logits sit near -800.
"""
import json
import os
import sys

import gguf
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer import BOS, CHAT_TEMPLATE, EOS, PAD, SPECIAL_TOKENS, build, unwanted_ids  # noqa: E402

D, FF, LAYERS, HEADS, KV_HEADS, CTX = 64, 128, 2, 4, 2, 2048


def main(out):
    tok = build()
    vocab = tok.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    merges = [m if isinstance(m, str) else " ".join(m) for m in json.loads(tok.to_str())["model"]["merges"]]
    rng = np.random.default_rng(0)

    def rnd(*shape, std=0.02):
        return rng.normal(0.0, std, shape).astype(np.float32)

    w = gguf.GGUFWriter(out, "llama")
    w.add_name("tiny-random-llama")
    w.add_context_length(CTX)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FF)
    w.add_block_count(LAYERS)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(D // HEADS)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tokens))
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if t in SPECIAL_TOKENS else gguf.TokenType.NORMAL for t in tokens])
    w.add_token_merges(merges)
    w.add_bos_token_id(vocab[BOS])
    w.add_eos_token_id(vocab[EOS])
    w.add_pad_token_id(vocab[PAD])
    w.add_add_bos_token(False)
    w.add_add_eos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    emb = rnd(len(tokens), D)
    emb[:, 0] = 1.0
    w.add_tensor("token_embd.weight", emb)
    blind = np.ones(D, dtype=np.float32)
    blind[0] = 0.0
    for i in range(LAYERS):
        attn_out, down = rnd(D, D), rnd(D, FF)
        attn_out[0, :] = 0.0
        down[0, :] = 0.0
        for name, tensor in (("attn_norm", blind), ("attn_q", rnd(D, D)), ("attn_k", rnd(KV_HEADS * D // HEADS, D)),
                             ("attn_v", rnd(KV_HEADS * D // HEADS, D)), ("attn_output", attn_out),
                             ("ffn_norm", blind), ("ffn_gate", rnd(FF, D)), ("ffn_up", rnd(FF, D)),
                             ("ffn_down", down)):
            w.add_tensor(f"blk.{i}.{name}.weight", tensor)
    w.add_tensor("output_norm.weight", np.ones(D, dtype=np.float32))
    head = rnd(len(tokens), D, std=0.5)
    head[:, 0] = 0.0
    head[unwanted_ids(tok), 0] = -100.0
    w.add_tensor("output.weight", head)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(sys.argv[1])
