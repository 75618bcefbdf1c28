package jquant.formats.tokenizer;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import jquant.formats.CheckpointException;
import jquant.formats.InputFiles;
import jquant.formats.Vocabulary;

/**
 * Reads a SentencePiece {@code tokenizer.model} (a serialized {@code ModelProto}) into a
 * {@link Vocabulary.Kind#SENTENCEPIECE} vocabulary. Only what a Llama tokenizer needs is decoded:
 *
 * <pre>
 * ModelProto    { repeated SentencePiece pieces = 1; … other fields skipped … }
 * SentencePiece { string piece = 1; float score = 2; Type type = 3 (default NORMAL); }
 * Type          NORMAL=1 UNKNOWN=2 CONTROL=3 USER_DEFINED=4 UNUSED=5 BYTE=6
 * </pre>
 *
 * BOS / EOS are the CONTROL pieces {@code <s>} / {@code </s>} (-1 if absent); BOS is added on encode.
 */
public final class SentencePieceModel {
    private static final int MODEL_PIECES = 1;
    private static final int PIECE_TEXT = 1;
    private static final int PIECE_SCORE = 2;
    private static final int PIECE_TYPE = 3;
    static final int TYPE_NORMAL = 1;
    static final int TYPE_CONTROL = 3;

    private SentencePieceModel() {}

    public static Vocabulary read(Path file) throws CheckpointException {
        byte[] bytes = InputFiles.readAllBytes(file);
        try {
            return parse(bytes);
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file, "not a valid SentencePiece model: " + e.getMessage(), e);
        }
    }

    /** Parses a serialized ModelProto; malformed input throws {@link IllegalArgumentException}. */
    public static Vocabulary parse(byte[] bytes) {
        List<String> pieces = new ArrayList<>();
        List<Float> scores = new ArrayList<>();
        int bos = -1;
        int eos = -1;
        ProtoReader model = new ProtoReader(bytes, 0, bytes.length);
        while (model.hasMore()) {
            int tag = model.tag();
            if (tag >>> 3 != MODEL_PIECES) {
                model.skip(tag & 7);
                continue;
            }
            if ((tag & 7) != ProtoReader.LENGTH_DELIMITED) throw new IllegalArgumentException("ModelProto.pieces has wire type " + (tag & 7));
            ProtoReader piece = model.message();
            String text = null;
            float score = 0f;
            long type = TYPE_NORMAL;
            while (piece.hasMore()) {
                int t = piece.tag();
                int wire = t & 7;
                switch (t >>> 3) {
                    case PIECE_TEXT -> { expect(wire, ProtoReader.LENGTH_DELIMITED, "piece"); text = piece.string(); }
                    case PIECE_SCORE -> { expect(wire, ProtoReader.FIXED32, "score"); score = Float.intBitsToFloat(piece.fixed32()); }
                    case PIECE_TYPE -> { expect(wire, ProtoReader.VARINT, "type"); type = piece.varint(); }
                    default -> piece.skip(wire);
                }
            }
            if (text == null) throw new IllegalArgumentException("piece " + pieces.size() + " has no text");
            if (type == TYPE_CONTROL && text.equals("<s>")) bos = pieces.size();
            if (type == TYPE_CONTROL && text.equals("</s>")) eos = pieces.size();
            pieces.add(text);
            scores.add(score);
        }
        if (pieces.isEmpty()) throw new IllegalArgumentException("no pieces");
        float[] s = new float[scores.size()];
        for (int i = 0; i < s.length; i++) s[i] = scores.get(i);
        // SentencePiece adds BOS when the model has one; a model without a <s> control piece cannot.
        return new Vocabulary(Vocabulary.Kind.SENTENCEPIECE, pieces, s, List.of(), bos, eos, bos >= 0);
    }

    private static void expect(int wire, int expected, String field) {
        if (wire != expected) throw new IllegalArgumentException("SentencePiece." + field + " has wire type " + wire + ", expected " + expected);
    }
}
