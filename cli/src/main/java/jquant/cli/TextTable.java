package jquant.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/**
 * A table for people: each column as wide as its widest cell, header included, so that long tensor names
 * keep the columns in line; text columns left-aligned, number columns right-aligned, two spaces between
 * columns, no spaces at the ends of lines.
 */
final class TextTable {
    private final List<String> headers = new ArrayList<>();
    private final List<Boolean> right = new ArrayList<>();
    private final List<String[]> rows = new ArrayList<>();

    /** Adds a left-aligned column. */
    TextTable text(String header) {
        return column(header, false);
    }

    /** Adds a right-aligned column. */
    TextTable number(String header) {
        return column(header, true);
    }

    private TextTable column(String header, boolean alignRight) {
        headers.add(header);
        right.add(alignRight);
        return this;
    }

    /** Adds a row, one cell per column ({@code String.valueOf} of each; null is an empty cell). */
    TextTable row(Object... cells) {
        if (cells.length != headers.size()) throw new IllegalArgumentException(cells.length + " cells for " + headers.size() + " columns");
        String[] row = new String[cells.length];
        for (int i = 0; i < cells.length; i++) row[i] = cells[i] == null ? "" : String.valueOf(cells[i]);
        rows.add(row);
        return this;
    }

    /** Prints the header and the rows, each line after {@code indent}. */
    void print(PrintWriter out, String indent) {
        int[] width = new int[headers.size()];
        for (int c = 0; c < width.length; c++) {
            width[c] = headers.get(c).length();
            for (String[] row : rows) width[c] = Math.max(width[c], row[c].length());
        }
        line(out, indent, headers.toArray(String[]::new), width);
        for (String[] row : rows) line(out, indent, row, width);
    }

    private void line(PrintWriter out, String indent, String[] cells, int[] width) {
        StringBuilder line = new StringBuilder(indent);
        for (int c = 0; c < cells.length; c++) {
            if (c > 0) line.append("  ");
            String pad = " ".repeat(width[c] - cells[c].length());
            line.append(right.get(c) ? pad + cells[c] : cells[c] + pad);
        }
        out.println(line.toString().stripTrailing());
    }
}
