package jquant.cli;

import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import jquant.formats.TensorKind;
import picocli.CommandLine;

/** A value of {@code --keep} (pack's and sweep's): the tensors kept out of the plan. */
enum KeepOption {
    embedding(TensorKind.EMBEDDING), head(TensorKind.HEAD), none(null);

    private final TensorKind kind;

    KeepOption(TensorKind kind) {
        this.kind = kind;
    }

    /** The tensor this value keeps, or null ({@code none}). */
    TensorKind kind() {
        return kind;
    }

    /** The kinds {@code values} keep; {@code none} with anything else is a usage error. */
    static Set<TensorKind> kinds(CommandLine cmd, List<KeepOption> values) {
        if (values.contains(none)) {
            if (values.size() > 1) throw new CommandLine.ParameterException(cmd, "--keep none keeps nothing: it takes no other value");
            return Set.of();
        }
        Set<TensorKind> kinds = EnumSet.noneOf(TensorKind.class);
        for (KeepOption k : values) kinds.add(k.kind);
        return kinds;
    }
}
