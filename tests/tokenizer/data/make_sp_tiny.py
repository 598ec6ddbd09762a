# Makes tests/tokenizer/data/sp-tiny.model (a small SentencePiece BPE model with byte fallback,
# trained by Google's sentencepiece) and sp-tiny.out: sentencepiece's own ids for every string of
# sp-tiny.inp. Run by hand (needs `pip install sentencepiece`); CI only reads the results:
#   python make_sp_tiny.py tests/tokenizer/data CORPUS
# where CORPUS was /usr/share/common-licenses/GPL-3 and Apache-2.0 followed by sp-tiny.inp three
# times. sp-tiny.inp is llama.cpp's tokenizer test strings plus five more.
import io, sys, sentencepiece as spm
out_dir = sys.argv[1]
corpus = open(sys.argv[2], encoding='utf-8').read()
model = io.BytesIO()
spm.SentencePieceTrainer.train(
    sentence_iterator=iter([l for l in corpus.splitlines() if l.strip()]), model_writer=model,
    model_type='bpe', vocab_size=700, byte_fallback=True, character_coverage=0.9995,
    normalization_rule_name='identity', remove_extra_whitespaces=False, add_dummy_prefix=True,
    user_defined_symbols=['<tool>'], split_digits=True)
open(f'{out_dir}/sp-tiny.model', 'wb').write(model.getvalue())
sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
sep = '\n__ggml_vocab_test__\n'
cases = open(f'{out_dir}/sp-tiny.inp', encoding='utf-8').read().split(sep)[:-1]
with open(f'{out_dir}/sp-tiny.out', 'w') as f:
    for c in cases:
        f.write(''.join(' %d' % i for i in sp.encode(c)) + '\n')
