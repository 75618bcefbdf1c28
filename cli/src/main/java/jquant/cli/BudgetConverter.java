package jquant.cli;

import jquant.quantize.BitPlan;
import picocli.CommandLine;

/** A bit budget on the command line: a number the allocator can meet ({@link BitPlan#checkBudget}), else a usage error. */
final class BudgetConverter implements CommandLine.ITypeConverter<Double> {
    @Override
    public Double convert(String value) {
        double budget;
        try {
            budget = Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new CommandLine.TypeConversionException("'" + value + "' is not a number of bits per weight");
        }
        try {
            return BitPlan.checkBudget(budget);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.TypeConversionException(e.getMessage());
        }
    }
}
