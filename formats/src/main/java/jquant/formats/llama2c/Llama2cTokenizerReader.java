package jquant.formats.llama2c;

import jquant.formats.CheckpointException;
import jquant.formats.MappedFile;
import jquant.formats.Vocabulary;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * llama2.c's {@code tokenizer.bin}: {@code uint32 max_token_length}, then per token
 * {@code float32 score, int32 length, length UTF-8 bytes}.
 *
 * <p>llama2.c's exporter writes SentencePiece's {@code ▁} as a space and BOS/EOS as
 * {@code "\n<s>\n"} / {@code "\n</s>\n"}; this reader turns them back into SentencePiece pieces (as
 * llama.cpp's converter does) so every source yields the same vocabulary. BOS = 1, EOS = 2, and
 * encoding adds BOS, as llama2.c does.
 */
public final class Llama2cTokenizerReader {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int BOS = 1;
    private static final int EOS = 2;

    private Llama2cTokenizerReader() {}

    public static Vocabulary read(Path path) throws CheckpointException {
        try (MappedFile file = MappedFile.open(path)) {
            MemorySegment seg = file.segment();
            long size = seg.byteSize();
            if (size < 4) throw new CheckpointException(path, "too short for a llama2.c tokenizer");
            int maxLen = seg.get(I32, 0);
            if (maxLen <= 0 || maxLen > 1 << 16) throw new CheckpointException(path, "implausible max_token_length " + maxLen);
            List<String> pieces = new ArrayList<>();
            List<Float> scores = new ArrayList<>();
            var decoder = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
            long off = 4;
            while (off < size) {
                if (off + 8 > size) throw new CheckpointException(path, "truncated entry for token " + pieces.size());
                float score = seg.get(F32, off);
                int len = seg.get(I32, off + 4);
                off += 8;
                if (len < 0 || len > maxLen || off + len > size) {
                    throw new CheckpointException(path, "token " + pieces.size() + " has length " + len
                            + " (max_token_length " + maxLen + ", " + (size - off) + " bytes left)");
                }
                String text;
                try {
                    text = decoder.decode(seg.asSlice(off, len).asByteBuffer()).toString();
                } catch (CharacterCodingException e) {
                    throw new CheckpointException(path, "token " + pieces.size() + " is not valid UTF-8");
                }
                off += len;
                pieces.add(toPiece(pieces.size(), text));
                scores.add(score);
            }
            float[] s = new float[scores.size()];
            for (int i = 0; i < s.length; i++) s[i] = scores.get(i);
            if (pieces.size() <= EOS) throw new CheckpointException(path, "only " + pieces.size() + " tokens");
            return new Vocabulary(Vocabulary.Kind.SENTENCEPIECE, pieces, s, List.of(), BOS, EOS, true);
        }
    }

    private static String toPiece(int id, String text) {
        if (id == BOS && text.equals("\n<s>\n")) return "<s>";
        if (id == EOS && text.equals("\n</s>\n")) return "</s>";
        return text.replace(' ', '\u2581');
    }
}
