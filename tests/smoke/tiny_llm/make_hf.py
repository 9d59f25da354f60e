"""Write a tiny random Llama model + tokenizer folder (torch + transformers). Usage: make_hf.py OUT_DIR

The generation config suppresses the unwanted ids, so `transformers serve` always returns exactly
max_tokens printable tokens (finish_reason "length").
"""
import os
import sys

import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer import BOS, CHAT_TEMPLATE, EOS, PAD, build, unwanted_ids  # noqa: E402


def main(out):
    raw = build()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token=BOS, eos_token=EOS, pad_token=PAD,
                                  model_max_length=2048)
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(out)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(torch.float32)
    model.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        suppress_tokens=unwanted_ids(raw), do_sample=True, temperature=1.0, top_k=0, top_p=1.0)
    model.save_pretrained(out)


if __name__ == "__main__":
    main(sys.argv[1])
