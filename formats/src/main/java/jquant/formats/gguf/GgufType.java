package jquant.formats.gguf;

/** The value types a GGUF metadata entry (or array element) can have, with their on-disk ids. */
public enum GgufType {
    UINT8(0, 1), INT8(1, 1), UINT16(2, 2), INT16(3, 2), UINT32(4, 4), INT32(5, 4), FLOAT32(6, 4),
    BOOL(7, 1),
    /** uint64 byte length then UTF-8 bytes. */
    STRING(8, 8),
    /** uint32 element type, uint64 count, then the elements. */
    ARRAY(9, 12),
    UINT64(10, 8), INT64(11, 8), FLOAT64(12, 8);

    private final int id;
    private final int minBytes;

    GgufType(int id, int minBytes) {
        this.id = id;
        this.minBytes = minBytes;
    }

    public int id() { return id; }

    /** The fewest bytes one value of this type occupies on disk (used to reject absurd counts early). */
    int minBytes() { return minBytes; }

    public boolean isInteger() {
        return switch (this) {
            case UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64 -> true;
            default -> false;
        };
    }

    /** The type with this id, or null. */
    public static GgufType fromId(int id) {
        for (GgufType t : values()) {
            if (t.id == id) return t;
        }
        return null;
    }
}
