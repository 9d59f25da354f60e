"""A tiny byte-level BPE trained offline on a seeded word corpus: deterministic, no downloads.

Shared by both model writers. The unwanted ids (special tokens and non-printable single bytes) are
what the model weights make unreachable, so every request returns exactly max_tokens printable
tokens on any server, with no request option needed.
"""
import random

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
BOS, EOS, PAD = "<|endoftext|>", "<|im_end|>", "<|endoftext|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have "
    "an they you were her she there one all we their been has would when if so no will more what up out "
    "time can only some could new them these two may first then do any like my now over such our man me "
    "even most made after also did many before must through back years where much your way well down "
    "should because each just those people how too little state good very make world still own see men "
    "work long get here between both life being under never day same another know while last might us "
    "great old year off come since against go came right used take three model token server request "
    "stream latency throughput benchmark client completion chat prompt response hello world test data"
).split()


def corpus(lines=4000, seed=0):
    rng = random.Random(seed)
    for _ in range(lines):
        words = [rng.choice(WORDS) for _ in range(rng.randint(4, 16))]
        if rng.random() < 0.3:
            words.append(str(rng.randint(0, 9999)))
        yield " ".join(words).capitalize() + rng.choice(".?!,")


def build(vocab_size=1024):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus(), trainer)
    return tok


def _byte_to_char():
    """GPT-2's reversible byte -> printable character table of byte-level BPE."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    table, extra = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def unwanted_ids(tok):
    vocab, table = tok.get_vocab(), _byte_to_char()
    ids = {vocab[t] for t in SPECIAL_TOKENS}
    ids |= {vocab[table[b]] for b in range(256) if not (32 <= b < 127 or b == 10)}
    return sorted(ids)
