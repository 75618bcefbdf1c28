package jquant.cli;

import java.util.function.DoubleUnaryOperator;
import jquant.quantize.BitPlan;
import picocli.CommandLine;

/** A bit budget on the command line: a number the allocator can meet ({@link BitPlan#checkBudget}), else a usage error. */
final class BudgetConverter implements CommandLine.ITypeConverter<Double> {
    @Override
    public Double convert(String value) {
        return parse(value, BitPlan::checkBudget);
    }

    /** allocate's budget: [1, 8], or up to 16 with --whole-file ({@link BitPlan#checkFileBudget}), which allocate checks once it knows. */
    static final class FileBudget implements CommandLine.ITypeConverter<Double> {
        @Override
        public Double convert(String value) {
            return parse(value, b -> {
                if (!(b >= 1 && b <= BitPlan.MAX_FILE_BITS)) throw new IllegalArgumentException(outside(b));
                return b;
            });
        }
    }

    /** The message for an allocate budget out of range. */
    static String outside(double budget) {
        return "budget " + budget + " bits per weight is outside [1, 8] ([1, " + BitPlan.MAX_FILE_BITS + "] with --whole-file)";
    }

    private static double parse(String value, DoubleUnaryOperator check) {
        double budget;
        try {
            budget = Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new CommandLine.TypeConversionException("'" + value + "' is not a number of bits per weight");
        }
        try {
            return check.applyAsDouble(budget);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.TypeConversionException(e.getMessage());
        }
    }
}
