package jquant.formats.quant;

/**
 * A matrix whose shape the T2P row-pair layout cannot hold (rows not a multiple of 4 or columns not
 * a multiple of 128). Checked on purpose: the caller keeps the stock layout and says so.
 */
public final class T2pShapeException extends Exception {

    private static final long serialVersionUID = 1L;

    public T2pShapeException(String message) { super(message); }

    static void check(String name, int rows, int cols) throws T2pShapeException {
        if (rows <= 0 || cols <= 0 || rows % T2pBlock.ROWS != 0 || cols % T2pBlock.WEIGHTS != 0) {
            throw new T2pShapeException(name + ": T2P needs rows a multiple of " + T2pBlock.ROWS + " and cols a multiple of "
                    + T2pBlock.WEIGHTS + ", got " + rows + "×" + cols + "; keep the stock layout");
        }
    }
}
